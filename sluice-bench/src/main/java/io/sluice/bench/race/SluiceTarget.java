package io.sluice.bench.race;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.nio.file.Path;
import java.util.List;

/** Sluice, embedded, with one write path and flush mode. */
final class SluiceTarget implements Target {

    private final Store store;

    SluiceTarget(Path directory, WritePath writePath, Durability durability, long segmentBytes) {
        StoreConfig config = StoreConfig.builder().writePath(writePath)
                .flushMode(durability == Durability.SYNC ? FlushMode.SYNC : FlushMode.ASYNC)
                .segmentSizeBytes(segmentBytes).build();
        this.store = Store.open(directory, config);
    }

    @Override
    public void send(int queue, List<byte[]> bodies) {
        if (bodies.size() == 1) {
            store.append(TOPIC, queue, Message.of(bodies.getFirst())).join();
        } else {
            store.appendBatch(TOPIC, queue, bodies.stream().map(Message::of).toList()).join();
        }
    }

    @Override
    public long count(long acknowledged) {
        long count = 0;
        for (int queue : store.queues(TOPIC)) {
            count += store.maxOffset(TOPIC, queue) - store.minOffset(TOPIC, queue);
        }
        return count;
    }

    @Override
    public byte[] first(int queue) {
        try (ReadResult result = store.read(TOPIC, queue, 0, 1, 1 << 20)) {
            return result.messages().isEmpty() ? null : result.messages().getFirst().bodyBytes();
        }
    }

    @Override
    public void close() {
        store.close();
    }
}
