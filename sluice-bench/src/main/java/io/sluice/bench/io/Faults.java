package io.sluice.bench.io;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This process's page-fault counters, from {@code /proc/self/stat}. Linux only. Stateless. */
public final class Faults {

    private Faults() {
    }

    /** Minor (no I/O) and major (I/O) faults since the process started. */
    public record Count(long minor, long major) {
        /** @return the faults between {@code earlier} and this count */
        public Count since(Count earlier) {
            return new Count(minor - earlier.minor, major - earlier.major);
        }
    }

    /** @return the counters now, or zeros where {@code /proc} cannot be read */
    public static Count now() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            // Fields after the command name (which may hold spaces), 1-based from field 3 "state".
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return new Count(Long.parseLong(fields[7]), Long.parseLong(fields[9]));
        } catch (IOException | RuntimeException e) {
            return new Count(0, 0);
        }
    }
}
