package io.sluice.bench.experiments;

import io.sluice.bench.io.DataFiles;
import io.sluice.bench.io.UnitIo;
import io.sluice.bench.io.UnitIo.Deadline;
import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.Table;
import io.sluice.bench.lab.UsageException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code small-io} (background section 1, seed 003): a file written and then read sequentially in small units,
 * through a mapping and through one {@code write}/{@code read} system call per unit, in the seed's table form.
 */
@Command(name = "small-io", mixinStandardHelpOptions = true,
        description = "Write then read a file sequentially in 1 B ... 10 KiB units: mmap against one "
                + "write(2)/read(2) call per unit.")
public final class SmallIo extends Experiment {

    static final int[] UNITS = {1, 100, 512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 10 << 10};

    @Option(names = "--size", paramLabel = "SIZE", description = "File size (default 2g, 64m with --quick).")
    String size;

    @Option(names = "--cell-seconds", paramLabel = "S", description = "Time cap per measurement; a capped one is "
            + "extrapolated to the whole file and marked (default 20, 0.5 with --quick).")
    Double cellSeconds;

    private long bytes() {
        return Sizes.parse(size != null ? size : options().quick ? "64m" : "2g");
    }

    @Override
    public String name() {
        return "small-io";
    }

    @Override
    public String title() {
        return "small sequential writes and reads: mmap against one system call per unit";
    }

    @Override
    public void validate() {
        long bytes = bytes();
        if (bytes < UNITS[UNITS.length - 1] || bytes > (16L << 30)) {
            throw new UsageException("--size must be between 10k and 16g, got " + size);
        }
        if (cellSeconds != null && !(cellSeconds > 0)) {
            throw new UsageException("--cell-seconds must be positive");
        }
    }

    @Override
    public long workBytes() {
        return bytes() + (8L << 20);
    }

    /** Seconds for the whole file, and whether they were extrapolated from a capped run. */
    private record Timing(double seconds, boolean extrapolated) {
        String text() {
            return seconds >= 1 ? String.format("%.2f s", seconds) : String.format("%.1f ms", seconds * 1000);
        }
    }

    @Override
    public void run(Lab lab) throws Exception {
        long fileSize = bytes();
        double cap = cellSeconds != null ? cellSeconds : lab.quick() ? 0.5 : 20;
        Path file = lab.work().resolve("data");
        Path warm = lab.work().resolve("warm");
        Table table = lab.table("small-io", "Sequential " + Sizes.format(fileSize)
                        + " in small units (seconds; * = extrapolated from a run capped at " + cap + " s)",
                "write unit", "mmap write", "write(2)", "read unit", "mmap read", "read(2)");
        Map<String, List<Double>> series = new LinkedHashMap<>();
        for (String name : List.of("mmap write", "write(2)", "mmap read", "read(2)")) {
            series.put(name, new ArrayList<>());
        }
        try (Progress progress = lab.progress("cells", UNITS.length * 4L)) {
            for (int unit : UNITS) {
                Timing[] timings = new Timing[4];
                for (int kind = 0; kind < 4; kind++) {
                    boolean mapped = kind % 2 == 0;
                    boolean write = kind < 2;
                    progress.say(Sizes.format(unit) + " " + (mapped ? "mmap " : "call ") + (write ? "write" : "read"));
                    // The same loop over a small file first, untimed, so the JIT has compiled it.
                    if (write) {
                        Files.deleteIfExists(warm);
                    }
                    cell(lab, warm, unit == 1 ? 1L << 20 : 8L << 20, unit, mapped, write, Deadline.NONE, "warm-up");
                    if (write) {
                        Files.deleteIfExists(file);
                    }
                    long start = System.nanoTime();
                    long moved = cell(lab, file, fileSize, unit, mapped, write, Deadline.in(cap),
                            Sizes.format(unit) + (mapped ? " mmap " : " call ") + (write ? "write" : "read"));
                    double seconds = (System.nanoTime() - start) / 1e9 * fileSize / moved;
                    timings[kind] = new Timing(seconds, moved < fileSize);
                    if (write && moved < fileSize) {
                        // A capped write leaves a short file; the reads need all of it.
                        completeFile(file, fileSize, unit);
                    }
                    progress.step(1);
                }
                table.add(Sizes.format(unit), mark(timings[0]), mark(timings[1]), Sizes.format(unit),
                        mark(timings[2]), mark(timings[3]));
                for (int kind = 0; kind < 4; kind++) {
                    series.get(List.copyOf(series.keySet()).get(kind)).add(timings[kind].seconds);
                    lab.figure(List.copyOf(series.keySet()).get(kind) + " " + Sizes.format(unit) + " seconds",
                            timings[kind].seconds);
                }
            }
        }
        lab.chart("small-io", Charts.bars("Sequential " + Sizes.format(fileSize) + " in small units "
                        + "(lower is better)", "unit", "seconds (log)",
                Arrays.stream(UNITS).mapToObj(Sizes::format).toList(), series, true));
        lab.note("Writes go to a new file each time: mmap extends it to full size, maps it and copies each unit in; "
                + "write(2) is one FileChannel.write of a direct buffer per unit. Reads follow straight after, with "
                + "the file in the page cache; mmap maps it afresh (its minor faults are timed). Mapping, unmapping "
                + "and opening are timed; syncing is not.");
    }

    private static String mark(Timing timing) {
        return timing.text() + (timing.extrapolated() ? " *" : "");
    }

    /** One sequential pass; returns the bytes moved, and checks them. */
    private static long cell(Lab lab, Path file, long size, int unit, boolean mapped, boolean write,
                             Deadline deadline, String what) throws IOException {
        try (Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                     StandardOpenOption.WRITE)) {
            MemorySegment buffer = arena.allocate(unit);
            for (int i = 0; i < unit; i++) {
                buffer.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            long moved;
            if (mapped) {
                if (write) {
                    channel.truncate(size);
                    channel.write(ByteBuffer.allocate(1), size - 1);
                }
                MemorySegment map = channel.map(write ? FileChannel.MapMode.READ_WRITE
                        : FileChannel.MapMode.READ_ONLY, 0, size, arena);
                moved = write ? UnitIo.mappedWrite(map, buffer, deadline) : UnitIo.mappedRead(map, buffer, deadline);
            } else {
                ByteBuffer bytes = buffer.asByteBuffer();
                moved = write ? UnitIo.channelWrite(channel, bytes, size, deadline)
                        : UnitIo.channelRead(channel, bytes, size, deadline);
            }
            lab.check(moved > 0 && pattern(channel, moved, unit), what + ": " + moved
                    + " bytes moved and the file holds the unit pattern where sampled");
            return moved;
        }
    }

    /** Checks the file's first and last written bytes against the repeating unit pattern. */
    private static boolean pattern(FileChannel channel, long length, int unit) throws IOException {
        for (long position : new long[] {0, length / 2, length - 1}) {
            ByteBuffer one = ByteBuffer.allocate(1);
            channel.read(one, position);
            if (one.get(0) != (byte) ((position % unit) * 31 + 7)) {
                return false;
            }
        }
        return true;
    }

    /** Writes the rest of a file that a capped write left short, in large calls. */
    private static void completeFile(Path file, long size, int unit) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            long position = Math.min(channel.size(), size) / unit * unit;
            ByteBuffer block = ByteBuffer.allocateDirect(unit * Math.max(1, (1 << 20) / unit));
            for (int i = 0; i < block.capacity(); i++) {
                block.put(i, (byte) ((i % unit) * 31 + 7));
            }
            while (position < size) {
                block.clear().limit((int) Math.min(block.capacity(), size - position));
                position += channel.write(block, position);
            }
        }
    }
}
