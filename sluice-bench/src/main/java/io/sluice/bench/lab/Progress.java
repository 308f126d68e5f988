package io.sluice.bench.lab;

import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * A progress bar on standard error for one long step (progressbar library), or nothing when
 * {@code quiet}. Used from one thread at a time.
 */
public final class Progress implements AutoCloseable {

    /** Draws nothing. */
    public static final Progress NONE = new Progress("", 0, true);

    private final ProgressBar bar;

    Progress(String task, long total, boolean quiet) {
        // Drawn only on a terminal: in a log, a bar redrawn twice a second is noise.
        boolean terminal = System.console() != null && System.console().isTerminal();
        this.bar = quiet || !terminal ? null : new ProgressBarBuilder().setTaskName(task).setInitialMax(total)
                .setStyle(ProgressBarStyle.ASCII).setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(
                        System.err)).setUpdateIntervalMillis(500).continuousUpdate().build();
    }

    /** Advances by {@code steps}. */
    public void step(long steps) {
        if (bar != null) {
            bar.stepBy(steps);
        }
    }

    /** Shows what the step is doing now, after the bar. */
    public void say(String text) {
        if (bar != null) {
            bar.setExtraMessage(text);
        }
    }

    @Override
    public void close() {
        if (bar != null) {
            bar.close();
        }
    }
}
