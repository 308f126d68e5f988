package io.sluice.cli;

import io.sluice.store.CacheStats;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreStatus;
import io.sluice.store.io.DiskSpace;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice stat}: topics, queues, offsets, segments and bytes of a store. */
@Command(name = "stat", description = "Show topics, queues, offsets, segments and bytes.")
final class StatCommand implements Callable<Integer> {

    @Mixin
    ExistingStore location;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        Path dir = location.require();
        PrintWriter out = spec.commandLine().getOut();
        try (Store store = Store.openReadOnly(dir, StoreConfig.defaults())) {
            StoreStatus status = store.status();
            DiskSpace disk = StoreConfig.defaults().fileIO().diskSpace(dir);
            List<Json> consumers = new ArrayList<>();
            for (ConsumerPosition p : store.consumerPositions()) {
                consumers.add(new Json().put("group", p.group()).put("topic", p.topic()).put("queue", p.queueId())
                        .put("nextOffset", p.nextOffset())
                        .put("lag", Math.max(0, store.maxOffset(p.topic(), p.queueId()) - p.nextOffset())));
            }
            long segmentBytes = sizeOf(dir.resolve("log"));
            long ownLogBytes = sizeOf(dir.resolve("logs"));
            long indexBytes = sizeOf(dir.resolve("index"));
            List<Json> queues = new ArrayList<>();
            for (String topic : store.topics()) {
                for (int queue : store.queues(topic)) {
                    queues.add(new Json().put("topic", topic).put("queue", queue)
                            .put("layout", store.layout(topic).name().toLowerCase(java.util.Locale.ROOT))
                            .put("minOffset", store.minOffset(topic, queue)).put("maxOffset", store.maxOffset(topic, queue)));
                }
            }
            if (json) {
                out.println(new Json().put("dir", dir.toAbsolutePath().toString()).put("state", status.state())
                        .put("writePosition", status.writePosition()).put("flushedPosition", status.flushedPosition())
                        .put("minLogPosition", status.minLogPosition()).put("segments", status.segmentCount())
                        .put("segmentBytes", segmentBytes).put("indexBytes", indexBytes).put("ownLogBytes", ownLogBytes)
                        .put("diskUsedRatio", disk.usedRatio()).put("diskUsableBytes", disk.usableBytes())
                        .put("mappedBytes", status.mappedBytes())
                        .put("unflushedBytes", status.writePosition() - status.flushedPosition())
                        .put("cacheHitRate", status.cache() == null ? null : status.cache().hitRate())
                        .put("appendsRefused", status.appendsRefused())
                        .put("queues", queues).put("consumers", consumers));
            } else {
                out.printf("store %s (%s)%n", dir.toAbsolutePath(), status.state());
                out.printf("log: positions %,d..%,d, %d segment files, %,d bytes on disk; indexes %,d bytes%n",
                        status.minLogPosition(), status.writePosition(), status.segmentCount(), segmentBytes, indexBytes);
                out.printf("disk: %.1f%% used, %,d bytes usable; log: %,d bytes mapped, %,d bytes not yet forced%n",
                        disk.usedRatio() * 100, disk.usableBytes(), status.mappedBytes(),
                        status.writePosition() - status.flushedPosition());
                CacheStats cache = status.cache();
                if (cache != null) {
                    out.printf("read cache (this process): %,d of %,d bytes, hit rate %.1f%% (%,d hits, %,d misses)%n",
                            cache.cachedBytes(), cache.capacityBytes(), cache.hitRate() * 100, cache.hits(),
                            cache.misses());
                }
                out.printf("retention: %d registered consumer positions%s%n", status.consumerPositions(),
                        status.appendsRefused() ? "; APPENDS REFUSED (disk above the hard ratio)" : "");
                for (String topic : store.topics()) {
                    for (int queue : store.queues(topic)) {
                        out.printf("  %s-%d: offsets %,d..%,d (%s log)%n", topic, queue, store.minOffset(topic, queue),
                                store.maxOffset(topic, queue), store.layout(topic).name().toLowerCase(java.util.Locale.ROOT));
                    }
                }
                if (ownLogBytes > 0) {
                    out.printf("logs of their own (TOPIC, QUEUE and BATCHES layouts): %,d bytes on disk%n", ownLogBytes);
                }
                store.ownLogStatuses().forEach((name, log) -> out.printf(
                        "  log logs/%s: positions %,d..%,d, %d segment files, %,d bytes mapped%n", name,
                        log.minLogPosition(), log.writePosition(), log.segmentCount(), log.mappedBytes()));
                for (ConsumerPosition p : store.consumerPositions()) {
                    out.printf("  consumer %s on %s-%d: next offset %,d, lag %,d%n", p.group(), p.topic(), p.queueId(),
                            p.nextOffset(), Math.max(0, store.maxOffset(p.topic(), p.queueId()) - p.nextOffset()));
                }
            }
        }
        out.flush();
        return 0;
    }

    /** @return bytes allocated on disk under {@code root} (what a full disk would count) */
    private static long sizeOf(Path root) throws IOException {
        if (!Files.exists(root)) {
            return 0;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        }
    }
}
