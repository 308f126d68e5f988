package io.sluice.bench.lab;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * One {@code sluice bench} experiment. Subclasses declare their own options, say how much disk they need,
 * and measure in {@link #run}; {@link Lab} does the rest (checks, results directory, publishing).
 */
public abstract class Experiment implements Callable<Integer> {

    @Mixin
    private LabOptions options = new LabOptions();

    @Spec(Spec.Target.SELF)
    private CommandSpec spec;

    private String command;

    /** @return the experiment's command name, e.g. {@code io-copy} */
    public abstract String name();

    /** @return one line saying what the experiment measures */
    public abstract String title();

    /** @return how many bytes of free space the work directory needs at the chosen sizes */
    public abstract long workBytes();

    /** Checks the experiment's own options. @throws UsageException when one is out of range */
    public void validate() {
    }

    /** Measures, filling {@code lab} with tables, charts and checks. */
    public abstract void run(Lab lab) throws Exception;

    /** @return the shared options */
    public LabOptions options() {
        return options;
    }

    /** Sets the command line recorded beside the results (when run as part of {@code all}). */
    public void command(String text) {
        command = text;
    }

    /** @return the command line that produced this run */
    public String command() {
        if (command == null && spec != null && spec.commandLine() != null
                && spec.commandLine().getParseResult() != null) {
            // The parse result holds the whole command line, this experiment's name included.
            return "sluice bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs());
        }
        return command != null ? command : "sluice bench " + name();
    }

    @Override
    public Integer call() {
        PrintWriter out = spec != null ? spec.commandLine().getOut() : new PrintWriter(System.out, true);
        PrintWriter err = spec != null ? spec.commandLine().getErr() : new PrintWriter(System.err, true);
        return Lab.execute(this, out, err);
    }

    /** Runs this experiment with explicit writers (for {@code all}). */
    public int execute(PrintWriter out, PrintWriter err) {
        return Lab.execute(this, out, err);
    }
}
