package io.sluice.bench.lab;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.knowm.xchart.internal.chartpart.Chart;

/**
 * One run of one experiment: its work directory, and what it reports (tables, charts, notes, self-checks),
 * which are written to {@code <results>/<experiment>/} only when the run succeeds. Until then they live in a
 * hidden {@code .<experiment>.partial} directory that a failed run deletes, so a results directory never holds
 * half an experiment. Used by the experiment's coordinating thread only.
 */
public final class Lab {

    private static final long SPACE_MARGIN_BYTES = 256L << 20;

    private final Experiment experiment;
    private final Path work;
    private final Machine machine;
    private final PrintWriter out;
    private final List<Table> tables = new ArrayList<>();
    private final Map<String, Chart<?, ?>> charts = new LinkedHashMap<>();
    private final List<String> notes = new ArrayList<>();
    private final List<String> checks = new ArrayList<>();
    private final Map<String, Object> figures = new LinkedHashMap<>();

    private Lab(Experiment experiment, Path work, Machine machine, PrintWriter out) {
        this.experiment = experiment;
        this.work = work;
        this.machine = machine;
        this.out = out;
    }

    /** @return true for a smoke-sized run */
    public boolean quick() {
        return experiment.options().quick;
    }

    /** @return the options shared by every experiment */
    public LabOptions options() {
        return experiment.options();
    }

    /** @return this run's own empty work directory, deleted when the run ends */
    public Path work() {
        return work;
    }

    /** @return the machine this run measures */
    public Machine machine() {
        return machine;
    }

    /** @return a new table that is printed and written as {@code name.csv} and into the JSON */
    public Table table(String name, String title, String... columns) {
        Table table = new Table(name, title, List.of(columns));
        tables.add(table);
        return table;
    }

    /** Saves {@code chart} as {@code name.png}. */
    public void chart(String name, Chart<?, ?> chart) {
        charts.put(name, chart);
    }

    /** Adds a sentence to the reading printed under the tables (and stored in the JSON). */
    public void note(String text) {
        notes.add(text);
    }

    /** Records a headline figure (a crossover, a ratio) under {@code key} in the JSON. */
    public void figure(String key, Object value) {
        figures.put(key, value);
    }

    /**
     * Records a self-check of the run's work.
     *
     * @throws VerificationException if {@code passed} is false: the run's figures must not be reported
     */
    public void check(boolean passed, String what) {
        if (!passed) {
            throw new VerificationException("check failed: " + what);
        }
        checks.add(what);
    }

    /** @return a progress bar for a long step, or a silent one when progress is turned off */
    public Progress progress(String task, long total) {
        return new Progress(experiment.name() + " " + task, total, options().noProgress);
    }

    /**
     * Runs {@code experiment}: checks its input, results directory and free space first (exit 2 and nothing
     * written when they are wrong), then runs it and publishes the results (exit 0), or deletes everything
     * it wrote (exit 1 when it failed or its self-checks did).
     */
    static int execute(Experiment experiment, PrintWriter out, PrintWriter err) {
        LabOptions options = experiment.options();
        String name = experiment.name();
        try {
            precheck(experiment);
        } catch (UsageException e) {
            err.println("sluice bench " + name + ": " + e.getMessage());
            err.flush();
            return 2;
        }
        boolean createdResults = !Files.exists(options.results);
        Path partial = options.results.resolve("." + name + ".partial");
        Path work = options.workDirectory().resolve(name);
        Instant started = Instant.now();
        try {
            Files.createDirectories(options.results);
            deleteTree(partial);
            deleteTree(work);
            Files.createDirectories(partial);
            Files.createDirectories(work);
            Lab lab = new Lab(experiment, work, Machine.describe(work), out);
            out.println("== sluice bench " + name + (options.quick ? " --quick" : "") + ": " + experiment.title());
            out.println("   machine: " + lab.machine.summary());
            out.flush();
            experiment.run(lab);
            lab.publish(partial, started);
            Path target = options.results.resolve(name);
            Path old = options.results.resolve("." + name + ".old");
            deleteTree(old);
            if (Files.exists(target)) {
                Files.move(target, old, StandardCopyOption.ATOMIC_MOVE);
            }
            Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
            deleteTree(old);
            lab.printSummary(target, started);
            return 0;
        } catch (Exception | OutOfMemoryError e) {
            err.println("sluice bench " + name + ": " + (e instanceof VerificationException ? "" : "failed: ")
                    + e.getMessage());
            if (!(e instanceof VerificationException) && !(e instanceof UsageException)) {
                e.printStackTrace(err);
            }
            err.flush();
            quietlyDelete(partial);
            return e instanceof UsageException ? 2 : 1;
        } finally {
            quietlyDelete(work);
            quietlyDeleteIfEmpty(options.workDirectory());
            if (createdResults) {
                quietlyDeleteIfEmpty(options.results);
            }
        }
    }

    /**
     * Checks an experiment's options, its results directory and the free space it needs, before anything is
     * written.
     *
     * @throws UsageException saying what is wrong
     */
    public static void precheck(Experiment experiment) {
        LabOptions options = experiment.options();
        experiment.validate();
        checkResultsDirectory(options.results);
        checkFreeSpace(options.workDirectory(), experiment.workBytes(), experiment.name());
    }

    private void publish(Path directory, Instant started) throws IOException {
        for (Table table : tables) {
            Files.writeString(directory.resolve(table.name() + ".csv"), table.csv());
        }
        for (Map.Entry<String, Chart<?, ?>> chart : charts.entrySet()) {
            Charts.savePng(chart.getValue(), directory.resolve(chart.getKey() + ".png"));
        }
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("experiment", experiment.name());
        json.put("title", experiment.title());
        json.put("command", experiment.command());
        json.put("quick", quick());
        json.put("started", started.toString());
        json.put("seconds", secondsSince(started));
        json.put("machine", machine.toMap());
        json.put("figures", figures);
        json.put("tables", tables.stream().map(Table::json).toList());
        json.put("charts", charts.keySet().stream().map(c -> c + ".png").toList());
        json.put("notes", notes);
        json.put("checks", checks);
        Files.writeString(directory.resolve("result.json"), Json.write(json));
        Files.writeString(directory.resolve("summary.md"), markdown(started));
        Files.writeString(directory.resolve("summary.html"), html(started));
        Files.writeString(directory.resolve("machine.json"), Json.write(machine.toMap()));
    }

    /** The run as a Markdown section for the report; chart paths are relative to the results directory. */
    private String markdown(Instant started) {
        StringBuilder out = new StringBuilder("## ").append(experiment.name()).append(": ")
                .append(experiment.title()).append("\n\n")
                .append("`").append(experiment.command()).append("` (").append(started).append(", ")
                .append(String.format("%.0f s", secondsSince(started))).append(", ").append(checks.size())
                .append(" self-checks passed)\n\nMachine: ").append(machine.summary()).append("\n\n");
        for (Table table : tables) {
            out.append(table.markdown()).append('\n');
        }
        for (String chart : charts.keySet()) {
            out.append("![").append(chart).append("](").append(experiment.name()).append('/').append(chart)
                    .append(".png)\n\n");
        }
        notes.forEach(n -> out.append("- ").append(n).append('\n'));
        return out.append('\n').toString();
    }

    /** The run as an HTML section for the report. */
    private String html(Instant started) {
        StringBuilder out = new StringBuilder("<section id=\"").append(experiment.name()).append("\">\n<h2>")
                .append(Html.escape(experiment.name() + ": " + experiment.title())).append("</h2>\n<p><code>")
                .append(Html.escape(experiment.command())).append("</code> (").append(started).append(", ")
                .append(String.format("%.0f s", secondsSince(started))).append(", ").append(checks.size())
                .append(" self-checks passed)</p>\n<p>Machine: ").append(Html.escape(machine.summary()))
                .append("</p>\n");
        tables.forEach(t -> out.append(t.html()));
        for (String chart : charts.keySet()) {
            out.append("<img src=\"").append(experiment.name()).append('/').append(chart).append(".png\" alt=\"")
                    .append(chart).append("\">\n");
        }
        out.append("<ul>\n");
        notes.forEach(n -> out.append("<li>").append(Html.escape(n)).append("</li>\n"));
        return out.append("</ul>\n</section>\n").toString();
    }

    private void printSummary(Path target, Instant started) {
        for (Table table : tables) {
            out.println();
            out.print(table.render());
        }
        if (!notes.isEmpty()) {
            out.println();
            notes.forEach(n -> out.println("  * " + n));
        }
        out.println();
        out.printf("  verified: %d checks passed (%s)%n", checks.size(), String.join("; ", checks.stream()
                .limit(4).toList()) + (checks.size() > 4 ? "; ..." : ""));
        out.printf("  results: %s (%d tables, %d charts, %.0f s)%n%n", target, tables.size(), charts.size(),
                secondsSince(started));
        out.flush();
    }

    private static double secondsSince(Instant started) {
        return (Instant.now().toEpochMilli() - started.toEpochMilli()) / 1000.0;
    }

    private static void checkResultsDirectory(Path results) {
        if (Files.exists(results)) {
            if (!Files.isDirectory(results)) {
                throw new UsageException("results path " + results + " exists and is not a directory");
            }
            if (!Files.isWritable(results)) {
                throw new UsageException("results directory " + results + " is not writable");
            }
            return;
        }
        Path parent = Machine.existingAncestor(results);
        if (!Files.isDirectory(parent) || !Files.isWritable(parent)) {
            throw new UsageException("cannot create results directory " + results + ": " + parent
                    + " is not a writable directory");
        }
    }

    static void checkFreeSpace(Path work, long bytes, String name) {
        Path existing = Machine.existingAncestor(work);
        if (!Files.isDirectory(existing) || !Files.isWritable(existing)) {
            throw new UsageException("work directory " + work + " cannot be created: " + existing
                    + " is not a writable directory");
        }
        try {
            long usable = Files.getFileStore(existing).getUsableSpace();
            if (usable < bytes + SPACE_MARGIN_BYTES) {
                throw new UsageException(String.format(
                        "%s needs %s free under %s (plus a %d MiB margin) but only %s is available; "
                                + "choose a smaller --size or another --dir", name, Sizes.format(bytes), existing,
                        SPACE_MARGIN_BYTES >> 20, Sizes.format(usable)));
            }
        } catch (IOException e) {
            throw new UsageException("cannot tell the free space under " + existing + ": " + e.getMessage());
        }
    }

    /** Deletes a file tree; absent is fine. */
    public static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static void quietlyDelete(Path root) {
        try {
            deleteTree(root);
        } catch (IOException e) {
            System.err.println("sluice bench: could not delete " + root + ": " + e.getMessage());
        }
    }

    private static void quietlyDeleteIfEmpty(Path directory) {
        try (Stream<Path> entries = Files.list(directory)) {
            if (entries.findAny().isEmpty()) {
                Files.delete(directory);
            }
        } catch (IOException e) {
            // Absent or not empty: nothing to tidy.
        }
    }
}
