package io.sluice.bench.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * CPU time of a process from /proc/&lt;pid&gt;/stat (fields 14 and 15, utime and stime, in clock ticks), and of its
 * threads from /proc/&lt;pid&gt;/task/&lt;tid&gt;/stat.
 */
final class Cpu {

    /** Linux's USER_HZ, which /proc reports in: 100 on every common architecture. */
    private static final double TICKS_PER_SECOND = 100.0;

    private Cpu() {
    }

    /** @return user + system CPU seconds the process has used */
    static double seconds(long pid) throws IOException {
        return secondsOf(Path.of("/proc", String.valueOf(pid), "stat"));
    }

    /**
     * The CPU time of a process's threads whose name starts with {@code namePrefix}. The kernel keeps a thread's name
     * to 15 bytes (its {@code comm}, which the JVM sets from the Java thread's name), so the prefix must be at most
     * that long.
     *
     * @return user + system CPU seconds those threads have used, and how many there are now
     */
    static ThreadTime threadSeconds(long pid, String namePrefix) throws IOException {
        if (namePrefix.length() > 15) {
            throw new IllegalArgumentException("a thread's name as the kernel keeps it is 15 bytes at most: "
                    + namePrefix);
        }
        double seconds = 0;
        int threads = 0;
        try (Stream<Path> tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
            for (Path task : tasks.toList()) {
                try {
                    if (Files.readString(task.resolve("comm")).strip().startsWith(namePrefix)) {
                        seconds += secondsOf(task.resolve("stat"));
                        threads++;
                    }
                } catch (NoSuchFileException ended) {
                    // The thread ended between the listing and the read.
                }
            }
        }
        return new ThreadTime(seconds, threads);
    }

    /** CPU seconds of some threads, and how many threads they were. */
    record ThreadTime(double seconds, int threads) {
    }

    private static double secondsOf(Path statFile) throws IOException {
        String stat = Files.readString(statFile);
        // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long utime = Long.parseLong(fields[11]);
        long stime = Long.parseLong(fields[12]);
        return (utime + stime) / TICKS_PER_SECOND;
    }

    /** @return this process's CPU seconds */
    static double self() throws IOException {
        return seconds(ProcessHandle.current().pid());
    }
}
