package io.sluice.bench.experiments;

import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Html;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Table;
import io.sluice.bench.lab.UsageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;

/**
 * {@code report}: gathers every experiment's results under the results directory into {@code index.html} and
 * {@code REPORT.md} there, each section followed by the figures the background articles published.
 */
@Command(name = "report", mixinStandardHelpOptions = true,
        description = "Gather every experiment's tables and charts into <results>/index.html and REPORT.md, "
                + "beside the figures the background articles published.")
public final class Report extends Experiment {

    /** Experiments in report order. */
    static final List<String> ORDER = List.of("io-copy", "mmap-vs-channel", "small-io", "store", "peers",
            "mmap-modes", "broker", "tls", "transactions", "compaction", "cluster");

    /** What the background articles published, per experiment (../shared/docs/background.md). */
    static final Map<String, List<String>> PUBLISHED = Map.ofEntries(
            Map.entry("io-copy", List.of(
                    "Seed 001 (JDK 11, CentOS, files of 200 MB to 5 GB): 1-byte FileInputStream copy about 1800 s; "
                            + "BufferedInputStream about 80 s; mmap about 30 s; transferTo (sendfile) about 30 s.",
                    "transferTo moves at most 2 GiB per call: it must loop.")),
            Map.entry("mmap-vs-channel", List.of(
                    "Seed 000 (1 GiB, macOS, JDK 17), read in page cache: mmap far ahead below 4 KiB (best 73 ms at "
                            + "2 KiB); FileChannel best at 64 KiB (167 ms) and ahead from 64 MiB units.",
                    "Write in page cache: mmap ahead below 8 KiB; FileChannel best at 64 KiB (160 ms), ahead from "
                            + "64 MiB.",
                    "Read not cached: mmap +500 ms from faults, FileChannel +100 ms; FileChannel ahead from 4 KiB and "
                            + "about 2x faster from 32 MiB.",
                    "Write not cached: mmap ahead throughout, falling from 4 KiB while FileChannel keeps rising.",
                    "Seed 002 (M1 Max, JDK 24): mmap stayed ahead in page cache, the gap shrinking as units grow. "
                            + "The crossover depends on the machine.")),
            Map.entry("small-io", List.of(
                    "Seed 003 (Go, 2 GiB, sequential), write: 1 B mmap 22.14 s / write(2) over 300 s; 100 B 2.84 s / "
                            + "22.86 s; 1 KiB 2.48 s / 3.48 s; 4 KiB 2.48 s / 1.74 s; 10 KiB 2.49 s / 1.65 s.",
                    "Read: 1 B mmap 8215 ms / read(2) over 300 s; 100 B 86.4 ms / 8100 ms; 1 KiB 8.1 ms / 993 ms; "
                            + "4 KiB 2.1 ms / 558 ms; 10 KiB 0.87 ms / 475 ms.",
                    "mmap reaches its best write speed at about 100 B units; write(2) needs about 4 KiB.")),
            Map.entry("store", List.of(
                    "Seed 004 (JMQ4, JD.com): sync flush, one message per request, producer waits for each ack: "
                            + "JMQ4 about 230,000 msg/s, Kafka about 92,000 msg/s.",
                    "Batched async flush: JMQ4 1,037,000 msg/s, Kafka 1,140,000 msg/s (same hardware, a broker "
                            + "with network clients, not an embedded store).")),
            Map.entry("peers", List.of(
                    "Seed 004: JMQ4 about 230,000 msg/s against Kafka about 92,000 under sync flush; 1,037,000 "
                            + "against 1,140,000 batched async. RocketMQ's and Chronicle's figures were not "
                            + "published in the background.")),
            Map.entry("mmap-modes", List.of(
                    "Seed 003: MAP_SHARED file mappings can exceed RAM + swap, since dirty pages are written back and "
                            + "evicted; MAP_PRIVATE is copy on write, so writing more than RAM + swap ends in the OOM "
                            + "killer. MAP_NORESERVE only skips the up-front check.")),
            Map.entry("broker", List.of(
                    "Seed 004 (JMQ4 against Kafka as brokers with network clients): Kafka about 92,000 msg/s under "
                            + "sync flush with one message per request, 1,140,000 msg/s batched async.")),
            Map.entry("tls", List.of(
                    "The background articles published no figures for brokers over TLS.",
                    "Sluice's own targets against Kafka in the same run, over TLS and SASL_SSL: throughput at least"
                            + " 1.5x, broker CPU per record at most 0.7x.")),
            Map.entry("transactions", List.of(
                    "The background articles published no figures for transactions.",
                    "Sluice's own targets against Kafka in the same run: transactional produce throughput at least "
                            + "2x, broker CPU per record at most 0.5x.")),
            Map.entry("compaction", List.of(
                    "The background articles published no figures for log compaction.",
                    "Sluice's own targets against Kafka in the same run: bytes cleaned per CPU second of the cleaner"
                            + " at least 2x, the produce p99 on another topic during cleaning no worse.")),
            Map.entry("cluster", List.of(
                    "The background articles published no figures for replicated brokers (seed 003 names a "
                            + "Raft-replicated log store, Logstore, by its segment files only).",
                    "Sluice's own targets against Kafka in the same run: acks=all throughput at least 2x, broker CPU "
                            + "per record at most 0.5x, produce p99 at most 0.5x; failover p50 at most 1 s and p99 "
                            + "at most 3 s.")));

    @Override
    public String name() {
        return "report";
    }

    @Override
    public String title() {
        return "every result in one page, beside the published figures";
    }

    @Override
    public long workBytes() {
        return 0;
    }

    @Override
    public void validate() {
        if (present().isEmpty()) {
            throw new UsageException("no experiment results under " + options().results
                    + ": run 'sluice bench all' or an experiment first");
        }
    }

    private List<String> present() {
        return ORDER.stream().filter(e -> Files.exists(options().results.resolve(e).resolve("summary.md"))).toList();
    }

    @Override
    public void run(Lab lab) throws IOException {
        Path results = options().results;
        List<String> included = present();
        StringBuilder markdown = new StringBuilder("# Sluice bench report\n\nGenerated " + Instant.now()
                + " from " + results.toAbsolutePath() + ". Each section: the command, the machine, the tables and "
                + "charts, a reading, then the figures the background articles published for comparison.\n\n");
        StringBuilder html = new StringBuilder("""
                <!DOCTYPE html>
                <html><head><meta charset="utf-8"><title>Sluice bench report</title>
                <style>
                body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
                table{border-collapse:collapse;margin:1em 0;font-size:90%}
                td,th{border:1px solid #ccc;padding:2px 6px}td.n{text-align:right}
                caption{font-weight:bold;text-align:left;padding:4px 0}
                img{max-width:100%;display:block;margin:1em 0}
                .published{background:#f4f4f0;padding:0.5em 1em;border-left:4px solid #aaa}
                </style></head><body>
                <h1>Sluice bench report</h1>
                """).append("<p>Generated ").append(Instant.now()).append(" from ")
                .append(Html.escape(results.toAbsolutePath().toString())).append(".</p>\n<ul>\n");
        included.forEach(e -> html.append("<li><a href=\"#").append(e).append("\">").append(e).append("</a></li>\n"));
        html.append("</ul>\n");
        Table table = lab.table("report", "Experiments in the report", "experiment", "sections", "charts");
        for (String experiment : included) {
            Path directory = results.resolve(experiment);
            markdown.append(Files.readString(directory.resolve("summary.md")));
            html.append(Files.readString(directory.resolve("summary.html")));
            List<String> published = PUBLISHED.get(experiment);
            markdown.append("**Published (background)**\n\n");
            published.forEach(p -> markdown.append("- ").append(p).append('\n'));
            markdown.append('\n');
            html.append("<div class=published><b>Published (background)</b><ul>\n");
            published.forEach(p -> html.append("<li>").append(Html.escape(p)).append("</li>\n"));
            html.append("</ul></div>\n");
            long charts;
            try (var files = Files.list(directory)) {
                charts = files.filter(f -> f.toString().endsWith(".png")).count();
            }
            table.add(experiment, "included", charts);
        }
        html.append("</body></html>\n");
        write(results.resolve("REPORT.md"), markdown.toString());
        write(results.resolve("index.html"), html.toString());
        String written = Files.readString(results.resolve("index.html"));
        lab.check(included.stream().allMatch(e -> written.contains("<section id=\"" + e + "\">")),
                "index.html has a section for each of the " + included.size() + " experiments with results");
        List<String> missing = ORDER.stream().filter(e -> !included.contains(e)).toList();
        if (!missing.isEmpty()) {
            lab.note("No results yet for: " + String.join(", ", missing) + ".");
        }
        lab.note("Open " + results.resolve("index.html") + " (or REPORT.md).");
    }

    private static void write(Path file, String text) throws IOException {
        Path temporary = file.resolveSibling("." + file.getFileName() + ".partial");
        Files.writeString(temporary, text);
        Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
