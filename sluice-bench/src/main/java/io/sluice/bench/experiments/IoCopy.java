package io.sluice.bench.experiments;

import io.sluice.bench.io.DataFiles;
import io.sluice.bench.io.Posix;
import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.Table;
import io.sluice.bench.lab.UsageException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code io-copy} (background section 1, seed 001): copies one file five ways, from a cold and from a warm
 * page cache, and checks every copy's CRC32C against the source.
 */
@Command(name = "io-copy", mixinStandardHelpOptions = true,
        description = "Copy a file with 1-byte and 8 KiB FileInputStream reads, buffered streams, a mapping and "
                + "a transferTo loop, cold and warm.")
public final class IoCopy extends Experiment {

    static final long MAX_SIZE = 5L << 30;
    private static final int CHUNK = 64 << 20;

    @Option(names = "--size", paramLabel = "SIZE", description = "File size (default 1g, 64m with --quick; at most 5g).")
    String size;

    @Option(names = "--one-byte-seconds", paramLabel = "S", description = "Time cap for the 1-byte copy, which is "
            + "then extrapolated to the whole file (default 20, 2 with --quick).")
    Double oneByteSeconds;

    private long bytes() {
        return Sizes.parse(size != null ? size : options().quick ? "64m" : "1g");
    }

    @Override
    public String name() {
        return "io-copy";
    }

    @Override
    public String title() {
        return "copy a file five ways, cold and warm page cache";
    }

    @Override
    public void validate() {
        long bytes = bytes();
        if (bytes > MAX_SIZE) {
            throw new UsageException("--size " + size + " is above the 5g this experiment allows");
        }
        if (oneByteSeconds != null && !(oneByteSeconds > 0)) {
            throw new UsageException("--one-byte-seconds must be positive");
        }
    }

    @Override
    public long workBytes() {
        return 2 * bytes();
    }

    private interface Copier {
        /** @return bytes copied (less than the size only for a copy capped by time) */
        long copy(Path from, Path to, long size, long capNanos, Progress progress) throws IOException;
    }

    private record Method(String name, boolean capped, Copier copier) {
    }

    @Override
    public void run(Lab lab) throws Exception {
        long size = bytes();
        double capSeconds = oneByteSeconds != null ? oneByteSeconds : lab.quick() ? 2 : 20;
        Path source = lab.work().resolve("source");
        Path target = lab.work().resolve("target");
        long sourceCrc;
        try (Progress progress = lab.progress("write source", size)) {
            sourceCrc = DataFiles.create(source, size, 42, progress);
        }
        List<Method> methods = List.of(
                new Method("FileInputStream 1 B", true, IoCopy::oneByte),
                new Method("FileInputStream 8 KiB", false, IoCopy::eightKib),
                new Method("BufferedInputStream", false, IoCopy::buffered),
                new Method("mmap (MemorySegment)", false, IoCopy::mapped),
                new Method("transferTo loop", false, IoCopy::transferTo));
        Table table = lab.table("io-copy", "Copy " + Sizes.format(size) + " (seconds; MB/s = 10^6 B/s)",
                "method", "cache", "seconds", "MB/s", "copied bytes", "extrapolated");
        Map<String, List<Double>> chartSeries = new LinkedHashMap<>();
        chartSeries.put("cold", new ArrayList<>());
        chartSeries.put("warm", new ArrayList<>());
        for (Method method : methods) {
            for (String cache : List.of("cold", "warm")) {
                Files.deleteIfExists(target);
                if (cache.equals("cold")) {
                    Posix.evict(source);
                } else {
                    DataFiles.warm(source);
                }
                long capNanos = method.capped ? (long) (capSeconds * 1e9) : Long.MAX_VALUE;
                long copied;
                long nanos;
                try (Progress progress = lab.progress(method.name + " " + cache, size)) {
                    long start = System.nanoTime();
                    copied = method.copier.copy(source, target, size, capNanos, progress);
                    nanos = System.nanoTime() - start;
                }
                boolean extrapolated = copied < size;
                long expected = extrapolated ? DataFiles.crc(source, copied) : sourceCrc;
                lab.check(copied > 0 && DataFiles.crc(target, copied) == expected,
                        method.name + " " + cache + ": CRC32C of " + copied + " copied bytes matches the source");
                Posix.evict(target);
                double seconds = nanos / 1e9 * size / copied;
                table.add(method.name, cache, seconds, size / seconds / 1e6, copied, extrapolated ? "yes" : "no");
                chartSeries.get(cache).add(seconds);
                lab.figure(method.name + " " + cache + " seconds", seconds);
            }
        }
        lab.chart("io-copy", Charts.bars("Copy " + Sizes.format(size) + " (lower is better)", "method",
                "seconds (log)", methods.stream().map(Method::name).toList(), chartSeries, true));
        lab.note("Cold: the source was synced and dropped from the page cache with posix_fadvise(DONTNEED) "
                + "before the copy; warm: it was read once first. The target is new each time; its sync is not "
                + "timed (it is synced and dropped afterwards, untimed, so copies do not inherit each other's "
                + "writeback).");
        lab.note(String.format("The 1-byte copy stops after %.0f s and its time is extrapolated linearly from the "
                + "bytes it copied (marked 'yes').", capSeconds));
    }

    private static long oneByte(Path from, Path to, long size, long capNanos, Progress progress) throws IOException {
        long deadline = System.nanoTime() + capNanos;
        long copied = 0;
        try (InputStream in = new FileInputStream(from.toFile()); OutputStream out = new FileOutputStream(to.toFile())) {
            int b;
            while ((b = in.read()) >= 0) {
                out.write(b);
                if (++copied % 65536 == 0) {
                    progress.step(65536);
                    if (System.nanoTime() > deadline) {
                        break;
                    }
                }
            }
        }
        return copied;
    }

    private static long eightKib(Path from, Path to, long size, long capNanos, Progress progress) throws IOException {
        return streams(new FileInputStream(from.toFile()), new FileOutputStream(to.toFile()), 8192, progress);
    }

    private static long buffered(Path from, Path to, long size, long capNanos, Progress progress) throws IOException {
        // Byte at a time, as the seed does: the buffers turn each byte into a method call, not a system call.
        long copied = 0;
        try (InputStream in = new BufferedInputStream(new FileInputStream(from.toFile()));
             OutputStream out = new BufferedOutputStream(new FileOutputStream(to.toFile()))) {
            int b;
            while ((b = in.read()) >= 0) {
                out.write(b);
                if (++copied % (1 << 20) == 0) {
                    progress.step(1 << 20);
                }
            }
        }
        return copied;
    }

    private static long streams(InputStream input, OutputStream output, int unit, Progress progress)
            throws IOException {
        long copied = 0;
        byte[] buffer = new byte[unit];
        try (InputStream in = input; OutputStream out = output) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                out.write(buffer, 0, n);
                copied += n;
                progress.step(n);
            }
        }
        return copied;
    }

    private static long mapped(Path from, Path to, long size, long capNanos, Progress progress) throws IOException {
        try (FileChannel in = FileChannel.open(from, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(to, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE);
             Arena arena = Arena.ofConfined()) {
            out.truncate(size);
            // A MemorySegment mapping has no 2 GiB limit; closing the arena unmaps both deterministically.
            MemorySegment source = in.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            MemorySegment target = out.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            for (long position = 0; position < size; position += CHUNK) {
                long length = Math.min(CHUNK, size - position);
                MemorySegment.copy(source, position, target, position, length);
                progress.step(length);
            }
        }
        return size;
    }

    static long transferTo(Path from, Path to, long size, long capNanos, Progress progress)
            throws IOException {
        try (FileChannel in = FileChannel.open(from, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(to, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            // One call moves at most 2 GiB (and may move less): loop until the whole file has gone.
            long position = 0;
            while (position < size) {
                long moved = in.transferTo(position, size - position, out);
                if (moved <= 0) {
                    throw new IOException("transferTo made no progress at " + position + " of " + size);
                }
                position += moved;
                progress.step(moved);
            }
            return position;
        }
    }
}
