package io.sluice.bench.broker;

import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * The compaction race: rounds in which each broker (the order alternating) is started on a fresh directory, a
 * compacted topic is loaded with updates to a fixed set of keys while nothing may be cleaned, and then the cleaner is
 * let at it while a paced producer writes to another topic. Measured: the cleaner thread's CPU time and the whole
 * broker's until the partition reaches its cleaned size, the bytes it cleaned, the partition's blocks on disk before
 * and after, and the paced producer's latency before and during the cleaning; checked: every key's latest value read
 * back. {@link CompactionRaceReport} publishes the rounds.
 */
public final class CompactionRaceRun {

    static final String SLUICE = "sluice";
    static final String KAFKA = "kafka";
    static final String UPDATES = "updates";
    static final String LIVE = "live";
    static final int RECORD_BYTES = 1024;
    /** The cleaner's pause between rounds that found nothing due, the same on both (Kafka's default is 15 s). */
    static final long CLEANER_BACKOFF_MILLIS = 1_000;
    /** min.cleanable.dirty.ratio set to start the cleaning. */
    static final double DIRTY_RATIO = 0.01;
    /** The keys' draw: the same updates in every round and on both brokers. */
    static final long SEED = 36;
    private static final long POLL_MILLIS = 200;
    private static final long TIMEOUT_SECONDS = 1_800;

    /**
     * The race's sizes.
     *
     * @param records updates of {@value #RECORD_BYTES} bytes
     * @param keys keys they are drawn over
     * @param segmentBytes segment size on both brokers
     * @param liveRate records a second the paced producer sends to the other topic
     * @param baselineSeconds how long the paced producer runs before the cleaning starts (the "before" figures)
     * @param settleSeconds how long the partition's size must stay put, once a cleaning was reported, to call it over
     * @param rounds interleaved rounds
     * @param flightRecordings a directory for a JFR recording of each broker, or null for none
     */
    public record Sizes(long records, int keys, long segmentBytes, int liveRate, int baselineSeconds,
                        int settleSeconds, int rounds, Path flightRecordings) {
    }

    /** What one round measured on one broker. */
    record Round(int round, String broker, long records, double loadSeconds, long logBytes, long cleanedBytes,
                 double cleanerCpuSeconds, double brokerCpuAboveLiveSeconds, double wallSeconds, long diskBefore,
                 long diskAfter, long readBack, double p50BeforeMillis, double p99BeforeMillis,
                 double p50DuringMillis, double p99DuringMillis, double idleCleanerCores,
                 CleaningWatch.Report report) {

        /** @return bytes cleaned per second of the cleaner thread's CPU */
        double bytesPerCleanerCpuSecond() {
            return cleanedBytes / cleanerCpuSeconds;
        }

        /** @return bytes cleaned per second of the broker's CPU above what the paced producer's load took */
        double bytesPerBrokerCpuSecond() {
            return cleanedBytes / brokerCpuAboveLiveSeconds;
        }
    }

    private final Lab lab;
    private final Sizes sizes;
    private final Map<String, List<Round>> results = new LinkedHashMap<>();

    public CompactionRaceRun(Lab lab, Sizes sizes) {
        this.lab = lab;
        this.sizes = sizes;
        results.put(SLUICE, new ArrayList<>());
        results.put(KAFKA, new ArrayList<>());
    }

    /** Runs every round, then publishes. */
    public void run() throws Exception {
        try (Progress progress = lab.progress("rounds", (long) sizes.rounds() * 2)) {
            for (int round = 0; round < sizes.rounds(); round++) {
                List<String> order = round % 2 == 0 ? List.of(KAFKA, SLUICE) : List.of(SLUICE, KAFKA);
                for (String broker : order) {
                    progress.say("round " + (round + 1) + " " + broker);
                    results.get(broker).add(runOne(round + 1, broker));
                    progress.step(1);
                }
            }
        }
        new CompactionRaceReport(lab, sizes, results).publish();
    }

    private BrokerProcess start(String broker, Path dir, int round) throws IOException, InterruptedException {
        CleaningWatch watch = broker.equals(SLUICE) ? CleaningWatch.SLUICE : CleaningWatch.KAFKA;
        List<String> jvm = new ArrayList<>(watch.loggerOptions());
        if (sizes.flightRecordings() != null) {
            jvm.add("-XX:StartFlightRecording=settings=profile,jdk.ExecutionSample#period=1ms,dumponexit=true,"
                    + "filename=" + sizes.flightRecordings().resolve("compaction-" + broker + "-round" + round
                    + ".jfr"));
        }
        Brokers.Tuning tuning = new Brokers.Tuning(sizes.segmentBytes(), CLEANER_BACKOFF_MILLIS, jvm);
        return broker.equals(SLUICE) ? Brokers.sluice(dir, false, tuning) : Brokers.kafka(dir, false, tuning);
    }

    private Round runOne(int round, String broker) throws Exception {
        CleaningWatch watch = broker.equals(SLUICE) ? CleaningWatch.SLUICE : CleaningWatch.KAFKA;
        Path dir = lab.work().resolve("compaction-" + broker + "-" + round);
        try (BrokerProcess process = start(broker, dir, round)) {
            String what = broker + " round " + round;
            CompactionLoad.createCompacted(process, UPDATES);
            CompactionLoad.Updates updates = CompactionLoad.produce(process, UPDATES, sizes.records(), sizes.keys(),
                    RECORD_BYTES, SEED);
            lab.check(updates.records() == sizes.records(), what + ": " + updates.records() + " of "
                    + sizes.records() + " updates acknowledged");
            Path partition = watch.partitionDirectory(dir, UPDATES);
            syncFileSystem(partition);
            Load.PacedProducer live = new Load.PacedProducer(process, LIVE, sizes.liveRate(), RECORD_BYTES);
            Cleaning cleaning;
            try (live) {
                cleaning = clean(process, watch, partition, live, what);
            }
            lab.check(live.acknowledged() == live.sent(), what + ": the paced producer's " + live.acknowledged()
                    + " of " + live.sent() + " records acknowledged");
            CompactionLoad.ReadBack read = CompactionLoad.readBack(process, UPDATES, updates, RECORD_BYTES);
            lab.check(read.mismatched() == 0 && read.keys() > 0, what + ": every one of " + read.keys()
                    + " keys read back with its latest value after cleaning"
                    + (read.mismatched() == 0 ? "" : " (" + read.mismatched() + " did not: " + read.firstMismatch()
                    + ")"));
            lab.check(read.records() < updates.records(), what + ": " + read.records() + " of " + updates.records()
                    + " records left after cleaning");
            CleaningWatch.Report report = watch.report(process.log(), UPDATES);
            return new Round(round, broker, updates.records(), updates.seconds(), cleaning.logBytes,
                    cleaning.sealedBytes, cleaning.cleanerCpu, cleaning.brokerCpuAboveLive, cleaning.wallSeconds,
                    cleaning.start.diskBytes(), cleaning.end.diskBytes(), read.records(),
                    millis(cleaning.before, 50), millis(cleaning.before, 99), millis(cleaning.during, 50),
                    millis(cleaning.during, 99), cleaning.idleCleanerCores, report);
        } finally {
            Lab.deleteTree(dir);
        }
    }

    /** What {@link #clean} measured. */
    private static final class Cleaning {
        long logBytes;
        long sealedBytes;
        CleaningWatch.Sample start;
        CleaningWatch.Sample end;
        double cleanerCpu;
        double brokerCpuAboveLive;
        double wallSeconds;
        double idleCleanerCores;
        Histogram before;
        Histogram during;
    }

    /**
     * With the paced producer running: a baseline window, then the cleaning, watched every {@value #POLL_MILLIS} ms
     * until the cleaner has reported a cleaning of the partition and the partition's size on disk, below where it
     * started, has not changed for the settle time. The cleaning's end is the first look that saw the final size.
     */
    private Cleaning clean(BrokerProcess process, CleaningWatch watch, Path partition, Load.PacedProducer live,
                           String what) throws Exception {
        Cleaning c = new Cleaning();
        Thread.sleep(1_000); // the paced producer's first second: its connection and metadata, not measured
        long baselineStart = System.nanoTime();
        double baselineCpu = process.cpuSeconds();
        Thread.sleep(TimeUnit.SECONDS.toMillis(sizes.baselineSeconds()));
        c.logBytes = CompactionLoad.logBytes(process, UPDATES);
        c.sealedBytes = watch.sealedLogBytes(partition);
        c.start = watch.sample(process.pid(), partition);
        double liveCpuPerSecond = (c.start.processCpuSeconds() - baselineCpu) / ((c.start.nanos() - baselineStart)
                / 1e9);
        lab.check(c.sealedBytes > 0, what + ": " + c.sealedBytes + " bytes in sealed segments to clean");
        CompactionLoad.startCleaning(process, UPDATES, DIRTY_RATIO);
        CleaningWatch.Sample last = c.start;
        c.end = c.start;
        long settleNanos = TimeUnit.SECONDS.toNanos(sizes.settleSeconds());
        while (true) {
            Thread.sleep(POLL_MILLIS);
            CleaningWatch.Sample sample = watch.sample(process.pid(), partition);
            if (sample.diskBytes() != last.diskBytes()) {
                c.end = sample;
            }
            last = sample;
            if (sample.diskBytes() < c.start.diskBytes() && sample.nanos() - c.end.nanos() >= settleNanos
                    && watch.report(process.log(), UPDATES).cleanings() > 0) {
                break;
            }
            if (sample.nanos() - c.start.nanos() > TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS)) {
                throw new IOException(what + ": the partition was not cleaned within " + TIMEOUT_SECONDS
                        + " s (on disk " + c.start.diskBytes() + " -> " + sample.diskBytes()
                        + " bytes; cleaner reports: " + watch.report(process.log(), UPDATES) + ")");
            }
        }
        lab.check(last.cleanerThreads() == 1, what + ": one cleaner thread (" + watch.cleanerThread() + "...) found");
        c.wallSeconds = (c.end.nanos() - c.start.nanos()) / 1e9;
        c.cleanerCpu = c.end.cleanerCpuSeconds() - c.start.cleanerCpuSeconds();
        c.brokerCpuAboveLive = c.end.processCpuSeconds() - c.start.processCpuSeconds()
                - liveCpuPerSecond * c.wallSeconds;
        c.idleCleanerCores = (last.cleanerCpuSeconds() - c.end.cleanerCpuSeconds())
                / ((last.nanos() - c.end.nanos()) / 1e9);
        lab.check(c.cleanerCpu > 0, what + ": the cleaner thread used " + c.cleanerCpu + " CPU s cleaning");
        c.before = live.latencies(baselineStart, c.start.nanos());
        c.during = live.latencies(c.start.nanos(), c.end.nanos());
        lab.check(c.during.getTotalCount() > 0, what + ": " + c.during.getTotalCount()
                + " paced records acknowledged during the cleaning");
        return c;
    }

    /**
     * Writes back what the load left dirty in the page cache (syncfs of the file system holding {@code path}), so
     * the baseline and the cleaning do not share the disk with the load's writeback: Kafka leaves it to the kernel,
     * Sluice ASYNC forces as it goes, so the two would otherwise start from different disks.
     */
    private static void syncFileSystem(Path path) throws IOException, InterruptedException {
        Process sync = new ProcessBuilder("sync", "-f", path.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!sync.waitFor(300, TimeUnit.SECONDS) || sync.exitValue() != 0) {
            sync.destroyForcibly();
            throw new IOException("sync -f " + path + " failed or took over 300 s");
        }
    }

    private static double millis(Histogram histogram, double percentile) {
        return histogram.getValueAtPercentile(percentile) / 1e3;
    }
}
