package io.sluice.cli;

import io.sluice.store.Calibration;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code sluice calibrate}: measures, on the store's disk, what reading and writing cost per byte through a
 * mapping and through {@code FileChannel} for a range of unit sizes, and writes the crossovers to the
 * store's {@code calibration} file. Both are timed over pages already in the page cache, as a store's
 * reads of recent data are, and the bytes are consumed (summed) either way, as a consumer would.
 */
@Command(name = "calibrate", description = "Measure mmap vs FileChannel per unit size on the store's disk and record"
        + " the crossover the read path uses.")
final class CalibrateCommand implements Callable<Integer> {

    static final int[] UNITS = {512, 4096, 16 * 1024, 64 * 1024, 256 * 1024, 1 << 20, 4 << 20};

    @Option(names = "--dir", required = true, description = "Store directory (created if absent).")
    Path dir;

    @Option(names = "--file-size", defaultValue = "268435456", description = "Test file size (default 256 MiB).")
    long fileSize;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    /** Nanoseconds per byte for one unit size, best of the repetitions. */
    record Row(int unit, double mappedRead, double channelRead, double mappedWrite, double channelWrite) {
    }

    @Override
    public Integer call() throws IOException {
        if (fileSize < UNITS[UNITS.length - 1] || fileSize > (16L << 30)) {
            throw new ParameterException(spec.commandLine(), "--file-size must be between " + UNITS[UNITS.length - 1]
                    + " and " + (16L << 30) + " bytes, was " + fileSize);
        }
        if (!checkStoreDirectory()) {
            Store.open(dir, StoreConfig.defaults()).close(); // the calibration belongs to a store: create it
        }
        if (Files.getFileStore(dir).getUsableSpace() < 2 * fileSize) {
            throw new ParameterException(spec.commandLine(), "not enough free space in " + dir + " for a "
                    + fileSize + "-byte test file");
        }
        Path file = dir.resolve(".calibrate-" + ProcessHandle.current().pid());
        List<Row> rows = new ArrayList<>();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, StandardOpenOption.DELETE_ON_CLOSE); Arena arena = Arena.ofShared()) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, fileSize, arena);
            MemorySegment buffer = arena.allocate(UNITS[UNITS.length - 1], 4096);
            fill(channel, buffer);
            for (int unit : UNITS) {
                rows.add(new Row(unit, best(() -> mappedRead(mapping, unit)), best(() -> channelRead(channel, buffer, unit)),
                        best(() -> mappedWrite(mapping, buffer, unit)), best(() -> channelWrite(channel, buffer, unit))));
            }
        }
        Calibration calibration = new Calibration(crossover(rows, true), crossover(rows, false),
                System.currentTimeMillis());
        calibration.write(dir);
        report(rows, calibration);
        return 0;
    }

    /** @return true if {@code dir} is a store; false if it is absent or empty */
    private boolean checkStoreDirectory() throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        boolean empty;
        try (Stream<Path> entries = Files.list(dir)) {
            empty = entries.findAny().isEmpty();
        }
        if (!empty && !Files.exists(dir.resolve("sluice.meta"))) {
            throw new ParameterException(spec.commandLine(), dir + " is neither empty nor a Sluice store");
        }
        return !empty;
    }

    private void fill(FileChannel channel, MemorySegment buffer) throws IOException {
        SplittableRandom random = new SplittableRandom(42);
        for (long at = 0; at + 8 <= buffer.byteSize(); at += 8) {
            buffer.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
        }
        for (long at = 0; at < fileSize; at += buffer.byteSize()) {
            ByteBuffer chunk = buffer.asSlice(0, Math.min(buffer.byteSize(), fileSize - at)).asByteBuffer();
            while (chunk.hasRemaining()) {
                channel.write(chunk, at + chunk.position());
            }
        }
        channel.force(false);
    }

    @FunctionalInterface
    private interface Measurement {
        double nanosPerByte() throws IOException;
    }

    private static double best(Measurement measurement) throws IOException {
        double best = Double.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            best = Math.min(best, measurement.nanosPerByte());
        }
        return best;
    }

    /** Unit offsets in a shuffled order, the same for every method. */
    private long[] offsets(int unit) {
        long[] offsets = new long[(int) (fileSize / unit)];
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = (long) i * unit;
        }
        SplittableRandom random = new SplittableRandom(7);
        for (int i = offsets.length - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            long swap = offsets[i];
            offsets[i] = offsets[j];
            offsets[j] = swap;
        }
        return offsets;
    }

    private static long sum(MemorySegment bytes) {
        long sum = 0;
        long longs = bytes.byteSize() / 8;
        for (long i = 0; i < longs; i++) {
            sum += bytes.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
        }
        return sum;
    }

    private long sink;

    /** One unit's worth of work at a file offset. */
    @FunctionalInterface
    private interface UnitOperation {
        void run(long offset) throws IOException;
    }

    /** @return nanoseconds per byte of running {@code operation} at every unit offset, in shuffled order */
    private double time(int unit, UnitOperation operation) throws IOException {
        long[] offsets = offsets(unit);
        long started = System.nanoTime();
        for (long offset : offsets) {
            operation.run(offset);
        }
        return (double) (System.nanoTime() - started) / ((long) offsets.length * unit);
    }

    private double mappedRead(MemorySegment mapping, int unit) throws IOException {
        return time(unit, offset -> sink += sum(mapping.asSlice(offset, unit)));
    }

    private double channelRead(FileChannel channel, MemorySegment buffer, int unit) throws IOException {
        MemorySegment target = buffer.asSlice(0, unit);
        return time(unit, offset -> {
            ByteBuffer bytes = target.asByteBuffer();
            while (bytes.hasRemaining()) {
                channel.read(bytes, offset + bytes.position());
            }
            sink += sum(target);
        });
    }

    private double mappedWrite(MemorySegment mapping, MemorySegment buffer, int unit) throws IOException {
        return time(unit, offset -> MemorySegment.copy(buffer, 0, mapping, offset, unit));
    }

    private double channelWrite(FileChannel channel, MemorySegment buffer, int unit) throws IOException {
        MemorySegment source = buffer.asSlice(0, unit);
        return time(unit, offset -> {
            ByteBuffer bytes = source.asByteBuffer();
            while (bytes.hasRemaining()) {
                channel.write(bytes, offset + bytes.position());
            }
        });
    }

    /**
     * @return the smallest unit from which the channel is cheaper at every larger unit too (so one noisy
     *     unit cannot flip the choice), or {@link Long#MAX_VALUE} if the mapping stays cheaper
     */
    static long crossover(List<Row> rows, boolean reads) {
        long crossover = Long.MAX_VALUE;
        for (int i = rows.size() - 1; i >= 0; i--) {
            Row row = rows.get(i);
            boolean channelWins = reads ? row.channelRead() < row.mappedRead() : row.channelWrite() < row.mappedWrite();
            if (!channelWins) {
                break;
            }
            crossover = row.unit();
        }
        return crossover;
    }

    private void report(List<Row> rows, Calibration calibration) {
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            List<Json> units = new ArrayList<>();
            for (Row row : rows) {
                units.add(new Json().put("unit", row.unit()).put("mappedReadGBps", 1 / row.mappedRead())
                        .put("channelReadGBps", 1 / row.channelRead()).put("mappedWriteGBps", 1 / row.mappedWrite())
                        .put("channelWriteGBps", 1 / row.channelWrite()));
            }
            out.println(new Json().put("dir", dir.toAbsolutePath().toString()).put("fileSize", fileSize)
                    .put("units", units).put("readCrossoverBytes", nullIfNever(calibration.readCrossoverBytes()))
                    .put("writeCrossoverBytes", nullIfNever(calibration.writeCrossoverBytes())));
        } else {
            out.printf("%-10s %14s %14s %14s %14s   (GB/s, best of 3, pages in cache, %,d-byte file)%n", "unit",
                    "mmap read", "channel read", "mmap write", "channel write", fileSize);
            for (Row row : rows) {
                out.printf("%-10d %14.2f %14.2f %14.2f %14.2f%n", row.unit(), 1 / row.mappedRead(),
                        1 / row.channelRead(), 1 / row.mappedWrite(), 1 / row.channelWrite());
            }
            out.printf("read crossover: %s; write crossover: %s; written to %s%n",
                    describe(calibration.readCrossoverBytes()), describe(calibration.writeCrossoverBytes()),
                    dir.resolve(Calibration.FILE_NAME));
        }
        out.flush();
    }

    private static Object nullIfNever(long bytes) {
        return bytes == Long.MAX_VALUE ? null : bytes;
    }

    private static String describe(long bytes) {
        return bytes == Long.MAX_VALUE ? "none (the mapping stays cheaper)" : "FileChannel from " + bytes + " bytes";
    }
}
