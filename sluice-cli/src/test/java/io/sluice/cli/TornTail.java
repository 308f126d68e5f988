package io.sluice.cli;

import io.sluice.store.AppendResult;
import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.IntFunction;

/**
 * Leaves a store as a crash during its last append can: the checkpoint from before that append (so the record
 * lies past the durable position), no clean-shutdown marker, and the record's bytes zero in its segment while
 * its index entries remain.
 */
final class TornTail {

    private TornTail() {
    }

    /**
     * @param messages how many messages to append to queue t-0, the last of which is torn
     * @return the torn record's append result
     */
    static AppendResult create(Path store, StoreConfig config, int messages, IntFunction<Message> message)
            throws IOException {
        try (Store s = Store.open(store, config)) {
            for (int i = 0; i < messages - 1; i++) {
                s.append("t", 0, message.apply(i)).join();
            }
        }
        byte[] checkpoint = Files.readAllBytes(store.resolve("checkpoint"));
        AppendResult last;
        try (Store s = Store.open(store, config)) {
            last = s.append("t", 0, message.apply(messages - 1)).join();
        }
        Files.write(store.resolve("checkpoint"), checkpoint);
        Files.delete(store.resolve("clean-shutdown"));
        long segmentBytes = config.segmentSizeBytes();
        long base = last.logPosition() / segmentBytes * segmentBytes;
        try (RandomAccessFile segment = new RandomAccessFile(
                store.resolve("log").resolve(String.format("%020d", base)).toFile(), "rw")) {
            segment.seek(last.logPosition() - base);
            segment.write(new byte[last.recordBytes()]);
        }
        return last;
    }
}
