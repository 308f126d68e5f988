package io.sluice.bench.experiments;

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
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mmap-modes} (background section 2, seed 003): writes a file through a shared and through a private
 * mapping while sampling the process's file-backed and anonymous resident memory, to show why a private
 * mapping of a log ends in the OOM killer (every written page becomes anonymous memory that only swap could
 * hold) and a shared one does not (written pages are file pages the kernel writes back and may evict).
 */
@Command(name = "mmap-modes", mixinStandardHelpOptions = true,
        description = "Write a file through a shared (READ_WRITE) and a private (PRIVATE) mapping and chart "
                + "file-backed and anonymous memory as it goes.")
public final class MmapModes extends Experiment {

    private static final long CHUNK = 16L << 20;

    @Option(names = "--size", paramLabel = "SIZE", description = "Bytes written through each mapping (default 4g, "
            + "256m with --quick). The private case stops early at half the memory available when it starts.")
    String size;

    private long bytes() {
        return Sizes.parse(size != null ? size : options().quick ? "256m" : "4g");
    }

    @Override
    public String name() {
        return "mmap-modes";
    }

    @Override
    public String title() {
        return "shared against private mappings: where the written pages go";
    }

    @Override
    public void validate() {
        if (bytes() < CHUNK || bytes() > (64L << 30)) {
            throw new UsageException("--size must be between 16m and 64g, got " + size);
        }
    }

    @Override
    public long workBytes() {
        return bytes();
    }

    /** One sample: seconds since the writing began, bytes written so far, and the memory figures in bytes. */
    private record Sample(double seconds, long written, long rss, long rssAnon, long rssFile, long dirty,
                          long writeback) {
    }

    @Override
    public void run(Lab lab) throws Exception {
        long target = bytes();
        Table table = lab.table("mmap-modes", "Writing " + Sizes.format(target) + " through a mapping "
                        + "(MiB; growth = largest sample minus the sample before the first write)", "mapping",
                "written MiB", "anonymous growth MiB", "file-backed growth MiB", "peak dirty + writeback MiB",
                "file holds the writes");
        Map<String, double[][]> lines = new LinkedHashMap<>();
        for (String mode : List.of("shared", "private")) {
            Path file = lab.work().resolve(mode);
            long limit = target;
            if (mode.equals("private")) {
                long half = meminfo("MemAvailable") / 2;
                if (half < target) {
                    limit = half / CHUNK * CHUNK;
                    lab.note(String.format("The private case stopped at %s, half the memory available when it "
                            + "started, well before the OOM killer would have ended it.", Sizes.format(limit)));
                }
            }
            List<Sample> samples = write(lab, file, target, limit, mode.equals("shared"));
            long written = samples.getLast().written;
            boolean reachedFile = holdsPattern(file, written);
            lab.check(reachedFile == mode.equals("shared"), mode + " mapping: the file "
                    + (reachedFile ? "holds" : "does not hold") + " the written bytes after unmapping");
            Sample before = samples.getFirst();
            double peakAnon = (samples.stream().mapToLong(Sample::rssAnon).max().orElse(0) - before.rssAnon)
                    / 1048576.0;
            double peakFile = (samples.stream().mapToLong(Sample::rssFile).max().orElse(0) - before.rssFile)
                    / 1048576.0;
            double peakDirty = samples.stream().mapToLong(s -> s.dirty + s.writeback).max().orElse(0) / 1048576.0;
            table.add(mode, written / 1048576.0, peakAnon, peakFile, peakDirty, reachedFile ? "yes" : "no");
            lab.figure(mode + " anonymous growth MiB", peakAnon);
            lab.figure(mode + " file-backed growth MiB", peakFile);
            lines.put(mode + ": resident", series(samples, s -> s.rss - before.rss));
            lines.put(mode + ": anonymous", series(samples, s -> s.rssAnon - before.rssAnon));
            lines.put(mode + ": file-backed", series(samples, s -> s.rssFile - before.rssFile));
            Files.delete(file);
        }
        lab.chart("mmap-modes", Charts.lines("Process memory while writing " + Sizes.format(target)
                + " through a shared, then a private mapping", "seconds since that mapping's first write", "MiB above the process's memory before it",
                lines));
        long swap = meminfo("SwapTotal");
        lab.note(String.format("A private mapping turns every written page into anonymous memory (copy on write) "
                + "that never reaches the file: writing a log larger than RAM + swap (here %s + %s) through one "
                + "ends in the OOM killer. A shared mapping's written pages stay file-backed: the kernel writes "
                + "them back and can evict them, so the log can outgrow memory.", gib(meminfo("MemTotal")),
                gib(Math.max(swap, 0))));
        lab.note("Memory is sampled every 50 ms from /proc/self/status (VmRSS, RssAnon, RssFile: this process) "
                + "and /proc/meminfo (Dirty, Writeback: system-wide). Each mapping is held for a moment after the "
                + "last write, so the tail of each line shows what the kernel does next.");
    }

    private List<Sample> write(Lab lab, Path file, long size, long limit, boolean shared) throws Exception {
        List<Sample> samples = new ArrayList<>();
        AtomicLong written = new AtomicLong();
        long start = System.nanoTime();
        samples.add(sample(start, 0));
        Thread sampler = Thread.ofPlatform().daemon().name("memory-sampler").start(() -> {
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    Sample sample = sample(start, written.get());
                    synchronized (samples) {
                        samples.add(sample);
                    }
                    Thread.sleep(50);
                }
            } catch (InterruptedException | IOException e) {
                // Stopped.
            }
        });
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE); Arena arena = Arena.ofConfined();
             Progress progress = lab.progress((shared ? "shared" : "private") + " write", limit)) {
            channel.truncate(size);
            channel.write(ByteBuffer.allocate(1), size - 1);
            MemorySegment mapping = channel.map(shared ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.PRIVATE,
                    0, size, arena);
            for (long position = 0; position < limit; position += CHUNK) {
                mapping.asSlice(position, CHUNK).fill((byte) 0x5A);
                written.set(position + CHUNK);
                progress.step(CHUNK);
            }
            // Hold the mapping a moment so the samples show what the kernel does with the pages next.
            Thread.sleep(lab.quick() ? 200 : 2000);
        } finally {
            sampler.interrupt();
            sampler.join();
        }
        synchronized (samples) {
            samples.add(sample(start, written.get()));
            return List.copyOf(samples);
        }
    }

    /** @return true if sampled pages of the first {@code length} bytes hold the written pattern */
    private static boolean holdsPattern(Path file, long length) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            boolean all = true;
            for (long position = 0; position < length; position += Math.max(4096, length / 64 / 4096 * 4096)) {
                ByteBuffer one = ByteBuffer.allocate(1);
                channel.read(one, position);
                all &= one.get(0) == 0x5A;
            }
            return all;
        }
    }

    private static String gib(long bytes) {
        return String.format("%.1f GiB", bytes / (double) (1L << 30));
    }

    private static double[][] series(List<Sample> samples, java.util.function.ToLongFunction<Sample> value) {
        double[][] xy = new double[2][samples.size()];
        for (int i = 0; i < samples.size(); i++) {
            xy[0][i] = samples.get(i).seconds;
            xy[1][i] = value.applyAsLong(samples.get(i)) / 1048576.0;
        }
        return xy;
    }

    private static Sample sample(long start, long written) throws IOException {
        Map<String, Long> status = kilobytes(Path.of("/proc/self/status"));
        Map<String, Long> memory = kilobytes(Path.of("/proc/meminfo"));
        return new Sample((System.nanoTime() - start) / 1e9, written, status.getOrDefault("VmRSS", 0L),
                status.getOrDefault("RssAnon", 0L), status.getOrDefault("RssFile", 0L),
                memory.getOrDefault("Dirty", 0L), memory.getOrDefault("Writeback", 0L));
    }

    private static long meminfo(String key) throws IOException {
        return kilobytes(Path.of("/proc/meminfo")).getOrDefault(key, -1L);
    }

    /** @return the "Key: N kB" lines of a /proc file, in bytes */
    private static Map<String, Long> kilobytes(Path file) throws IOException {
        Map<String, Long> values = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.endsWith(" kB")) {
                String number = line.substring(colon + 1, line.length() - 3).trim();
                values.put(line.substring(0, colon), Long.parseLong(number) * 1024);
            }
        }
        return values;
    }
}
