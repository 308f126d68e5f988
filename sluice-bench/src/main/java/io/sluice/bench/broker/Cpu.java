package io.sluice.bench.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time of a process from /proc/&lt;pid&gt;/stat (fields 14 and 15, utime and stime, in clock ticks). */
final class Cpu {

    /** Linux's USER_HZ, which /proc reports in: 100 on every common architecture. */
    private static final double TICKS_PER_SECOND = 100.0;

    private Cpu() {
    }

    /** @return user + system CPU seconds the process has used */
    static double seconds(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
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
