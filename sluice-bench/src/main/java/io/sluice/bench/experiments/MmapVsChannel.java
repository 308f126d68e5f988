package io.sluice.bench.experiments;

import io.sluice.bench.io.DataFiles;
import io.sluice.bench.io.Faults;
import io.sluice.bench.io.Posix;
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
import java.util.SplittableRandom;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mmap-vs-channel} (background section 1, seeds 000 and 002): one file read and written in units from
 * 64 B to 512 MiB through a mapping, a {@code FileChannel} with a direct buffer, and one with a heap buffer;
 * (a) with the file in the page cache and locked there, (b) with it out of the cache. Prints where the
 * channel overtakes the mapping, for each case.
 */
@Command(name = "mmap-vs-channel", mixinStandardHelpOptions = true,
        description = "Read and write a file in 64 B ... 512 MiB units: mmap against FileChannel with a direct "
                + "and a heap buffer, in the page cache (locked) and out of it.")
public final class MmapVsChannel extends Experiment {

    static final long[] UNITS = {64, 128, 512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 32 << 10, 64 << 10, 1 << 20,
            32 << 20, 64 << 20, 512 << 20};
    static final List<String> METHODS = List.of("mmap", "channel direct", "channel heap");
    static final List<String> CASES = List.of("cached", "uncached");
    static final List<String> OPS = List.of("read", "write");

    @Option(names = "--size", paramLabel = "SIZE", description = "File size (default 1g, 64m with --quick). "
            + "Units larger than the file are skipped.")
    String size;

    @Option(names = "--cell-seconds", paramLabel = "S", description = "Time cap per measurement; a capped one is "
            + "extrapolated to the whole file and marked (default 10, 0.5 with --quick).")
    Double cellSeconds;

    private long bytes() {
        return Sizes.parse(size != null ? size : options().quick ? "64m" : "1g");
    }

    @Override
    public String name() {
        return "mmap-vs-channel";
    }

    @Override
    public String title() {
        return "mmap against FileChannel (direct and heap buffers) per unit size, cached and uncached";
    }

    @Override
    public void validate() {
        long bytes = bytes();
        if (bytes < UNITS[0] || bytes > (16L << 30)) {
            throw new UsageException("--size must be between 64 bytes and 16g, got " + size);
        }
        if (cellSeconds != null && !(cellSeconds > 0)) {
            throw new UsageException("--cell-seconds must be positive");
        }
    }

    @Override
    public long workBytes() {
        return 2 * bytes();
    }

    /** One measured cell: bytes moved in nanos, and the page faults taken; extrapolated when capped. */
    private record Cell(long bytes, long nanos, long size, Faults.Count faults) {
        double millisForFile() {
            return nanos / 1e6 * size / bytes;
        }

        boolean extrapolated() {
            return bytes < size;
        }
    }

    @Override
    public void run(Lab lab) throws Exception {
        long fileSize = bytes();
        double cap = cellSeconds != null ? cellSeconds : lab.quick() ? 0.5 : 10;
        long[] units = Arrays.stream(UNITS).filter(u -> u <= fileSize).toArray();
        Path cachedFile = lab.work().resolve("cached");
        try (Progress progress = lab.progress("write file", fileSize)) {
            DataFiles.create(cachedFile, fileSize, 7, progress);
        }
        Path warmFile = lab.work().resolve("warm");
        DataFiles.create(warmFile, Math.min(fileSize, 8L << 20), 8, Progress.NONE);
        // results[case][op][method][unit] in milliseconds for the whole file
        Map<String, double[]> millis = new LinkedHashMap<>();
        Table table = lab.table("mmap-vs-channel", "Milliseconds to move " + Sizes.format(fileSize)
                        + " (lower is better; * = extrapolated from a capped run)",
                "case", "op", "unit", "mmap ms", "channel direct ms", "channel heap ms", "mmap minor faults",
                "mmap major faults", "extrapolated");
        try (Progress progress = lab.progress("cells", (long) units.length * 12)) {
            try (Arena arena = Arena.ofConfined();
                 FileChannel channel = FileChannel.open(cachedFile, StandardOpenOption.READ,
                         StandardOpenOption.WRITE)) {
                MemorySegment locked = channel.map(FileChannel.MapMode.READ_WRITE, 0, fileSize, arena);
                lock(lab, locked);
                // mlock faults a shared mapping's pages in read-only; without this the first write to each
                // page would take a write-protect fault inside the first write measurement.
                for (long page = 0; page < fileSize; page += 4096) {
                    locked.set(ValueLayout.JAVA_BYTE, page, locked.get(ValueLayout.JAVA_BYTE, page));
                }
                measureCase(lab, "cached", units, cap, cachedFile, locked, millis, table, progress);
                tryUnlock(locked);
            }
            measureCase(lab, "uncached", units, cap, cachedFile, null, millis, table, progress);
        }
        report(lab, units, millis, fileSize);
    }

    private void measureCase(Lab lab, String caseName, long[] units, double cap, Path file, MemorySegment locked,
                             Map<String, double[]> millis, Table table, Progress progress) throws IOException {
        for (int u = 0; u < units.length; u++) {
            long unit = units[u];
            for (String op : OPS) {
                List<String> capped = new ArrayList<>();
                double[] row = new double[METHODS.size()];
                Faults.Count mmapFaults = null;
                for (int m = 0; m < METHODS.size(); m++) {
                    String method = METHODS.get(m);
                    progress.say(caseName + " " + op + " " + Sizes.format(unit) + " " + method);
                    // The same loop over a small cached file first, untimed: otherwise the first cells of
                    // each kind time the interpreter and the JIT compiling, not the I/O.
                    measure(lab, "warm-up", op, method, (int) Math.min(unit, warmFile(file).toFile().length()),
                            cap, warmFile(file), null);
                    Cell cell = measure(lab, caseName, op, method, (int) unit, cap, file, locked);
                    row[m] = cell.millisForFile();
                    if (m == 0) {
                        mmapFaults = cell.faults;
                    }
                    if (cell.extrapolated()) {
                        capped.add(method);
                    }
                    millis.computeIfAbsent(caseName + "/" + op + "/" + method, k -> new double[units.length])[u] =
                            row[m];
                    progress.step(1);
                }
                table.add(caseName, op, Sizes.format(unit), row[0], row[1], row[2], mmapFaults.minor(),
                        mmapFaults.major(), capped.isEmpty() ? "" : String.join(" + ", capped));
            }
        }
    }

    private Cell measure(Lab lab, String caseName, String op, String method, int unit, double cap, Path file,
                         MemorySegment locked) throws IOException {
        long fileSize = Files.size(file);
        boolean cached = !caseName.equals("uncached");
        boolean write = op.equals("write");
        Path target = file;
        if (write && !cached) {
            // Not in cache: every write measurement gets a fresh, empty file.
            target = lab.work().resolve("fresh");
            Files.deleteIfExists(target);
            Files.createFile(target);
        } else if (!cached) {
            Posix.evict(file);
        }
        try (Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(target, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment buffer = arena.allocate(unit, 4096);
            if (write) {
                fill(buffer, unit);
            }
            // The heap buffer is made (and filled) before the clock starts: only the I/O is timed.
            ByteBuffer bytes = method.equals("mmap") ? null : method.equals("channel direct")
                    ? buffer.asByteBuffer() : ByteBuffer.allocate(unit).put(buffer.asByteBuffer()).clear();
            Faults.Count faultsBefore = Faults.now();
            long start = System.nanoTime();
            Deadline deadline = Deadline.in(cap);
            long moved;
            if (bytes == null) {
                moved = mapped(channel, locked, fileSize, buffer, write, deadline);
            } else {
                moved = write ? UnitIo.channelWrite(channel, bytes, fileSize, deadline)
                        : UnitIo.channelRead(channel, bytes, fileSize, deadline);
            }
            long nanos = System.nanoTime() - start;
            Faults.Count faults = Faults.now().since(faultsBefore);
            if (bytes != null && !write) {
                // The check reads the last unit from the segment; a heap read left it in the heap buffer.
                MemorySegment.copy(MemorySegment.ofBuffer(bytes.clear()), 0, buffer, 0, unit);
            }
            verify(lab, channel, buffer, moved, write, caseName + " " + op + " " + Sizes.format(unit) + " " + method);
            if (write && !cached) {
                channel.force(false);
            }
            return new Cell(moved, nanos, fileSize, faults);
        } finally {
            if (write && !cached) {
                Files.deleteIfExists(target);
            }
        }
    }

    private static Path warmFile(Path file) {
        return file.resolveSibling("warm");
    }

    private static long mapped(FileChannel channel, MemorySegment locked, long fileSize, MemorySegment buffer,
                               boolean write, Deadline deadline) throws IOException {
        if (locked != null) {
            return write ? UnitIo.mappedWrite(locked, buffer, deadline) : UnitIo.mappedRead(locked, buffer, deadline);
        }
        // Out of the cache a reader or writer maps the file itself; mapping and unmapping are in the time.
        if (write) {
            channel.truncate(fileSize);
            channel.write(ByteBuffer.allocate(1), fileSize - 1);
        }
        try (Arena mapping = Arena.ofConfined()) {
            MemorySegment map = channel.map(write ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY,
                    0, fileSize, mapping);
            return write ? UnitIo.mappedWrite(map, buffer, deadline) : UnitIo.mappedRead(map, buffer, deadline);
        }
    }

    private static void fill(MemorySegment buffer, int unit) {
        SplittableRandom random = new SplittableRandom(unit);
        for (long i = 0; i < buffer.byteSize(); i++) {
            buffer.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
    }

    /**
     * Writes: eight sampled stretches of the file hold the unit's bytes at the right phase. Reads: the buffer
     * holds the last unit read, as an independent read of the file sees it.
     */
    private static void verify(Lab lab, FileChannel channel, MemorySegment buffer, long moved, boolean write,
                               String what) throws IOException {
        long unit = buffer.byteSize();
        if (write) {
            SplittableRandom random = new SplittableRandom(moved);
            boolean ok = true;
            for (int i = 0; i < 8 && ok; i++) {
                long position = random.nextLong(Math.max(1, moved - 64));
                int length = (int) Math.min(64, moved - position);
                ByteBuffer found = ByteBuffer.allocate(length);
                channel.read(found, position);
                for (int j = 0; j < length && ok; j++) {
                    ok = found.get(j) == buffer.get(ValueLayout.JAVA_BYTE, (position + j) % unit);
                }
            }
            lab.check(moved > 0 && ok, what + ": 8 sampled stretches of the " + moved + " written bytes are right");
        } else {
            long last = (moved - 1) / unit * unit;
            int length = (int) Math.min(unit, moved - last);
            ByteBuffer expected = ByteBuffer.allocateDirect(length);
            channel.read(expected, last);
            boolean ok = MemorySegment.ofBuffer(expected.flip()).mismatch(buffer.asSlice(0, length)) == -1;
            lab.check(moved > 0 && ok, what + ": " + moved + " bytes read, the last unit matches the file");
        }
    }

    private static void lock(Lab lab, MemorySegment mapping) {
        try {
            Posix.mlock(mapping);
            lab.note("Cached case: the file was read into the page cache and its mapping mlock()ed for the whole "
                    + "case; mmap measurements use that mapping, so they take no page faults, except write-protect faults on pages "
                    + "that writeback has cleaned since the last write (the mmap fault columns count them).");
        } catch (IOException e) {
            lab.note("Cached case: mlock was refused (" + e.getMessage() + "), so the file was cached but not "
                    + "locked.");
        }
    }

    private static void tryUnlock(MemorySegment mapping) {
        try {
            Posix.munlock(mapping);
        } catch (IOException e) {
            // Not locked, or unmapped right after anyway.
        }
    }

    private static void report(Lab lab, long[] units, Map<String, double[]> millis, long fileSize) {
        List<String> categories = Arrays.stream(units).mapToObj(Sizes::format).toList();
        for (String caseName : CASES) {
            for (String op : OPS) {
                Map<String, List<Double>> series = new LinkedHashMap<>();
                for (String method : METHODS) {
                    series.put(method, Arrays.stream(millis.get(caseName + "/" + op + "/" + method)).boxed().toList());
                }
                lab.chart("mmap-vs-channel-" + op + "-" + caseName, Charts.bars(
                        op + ", " + (caseName.equals("cached") ? "in page cache (locked)" : "not in page cache")
                                + ": ms for " + Sizes.format(fileSize) + " (lower is better)",
                        "unit", "milliseconds (log)", categories, series, true));
                for (String channel : List.of("channel direct", "channel heap")) {
                    double[] mmap = millis.get(caseName + "/" + op + "/mmap");
                    double[] other = millis.get(caseName + "/" + op + "/" + channel);
                    String crossover = crossover(units, mmap, other);
                    List<String> wins = new ArrayList<>();
                    for (int i = 0; i < units.length; i++) {
                        if (other[i] < mmap[i]) {
                            wins.add(Sizes.format(units[i]));
                        }
                    }
                    lab.figure("crossover " + op + " " + caseName + " " + channel, crossover);
                    lab.note(String.format("%s %s: %s %s (faster at: %s).", op, caseName, channel,
                            crossover.equals("never") ? "never stays ahead of mmap"
                                    : "is ahead of mmap from " + crossover + " units on",
                            wins.isEmpty() ? "no unit" : String.join(", ", wins)));
                }
            }
        }
        lab.note("Uncached reads: the file was synced and dropped with posix_fadvise(DONTNEED) before each "
                + "measurement, and mmap maps it afresh (map, faults and unmap are timed). Uncached writes go to a "
                + "new empty file each time (mmap: extended to full size, then mapped); the final sync is not "
                + "timed.");
    }

    /** @return the smallest unit from which the channel is faster at that unit and every larger one */
    static String crossover(long[] units, double[] mmap, double[] channel) {
        int from = -1;
        for (int i = units.length - 1; i >= 0 && channel[i] < mmap[i]; i--) {
            from = i;
        }
        return from < 0 ? "never" : Sizes.format(units[from]);
    }
}
