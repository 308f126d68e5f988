package io.sluice.cli;

/** Placeholder entry point replaced below. */
public final class Main {
    private Main() {
    }

    /** @param args arguments */
    public static void main(String[] args) {
    }
}
