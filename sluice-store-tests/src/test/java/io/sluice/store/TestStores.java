package io.sluice.store;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.params.provider.Arguments;

/** Shared configurations and message helpers for the store's tests. */
public final class TestStores {

    private TestStores() {
    }

    /** A small-segment configuration so tests roll segments often. */
    public static StoreConfig.Builder small(WritePath path, FlushMode mode) {
        return StoreConfig.builder()
                .segmentSizeBytes(256 * 1024)
                .writePath(path)
                .flushMode(mode)
                .maxMessageBytes(32 * 1024)
                .writeBufferBytes(64 * 1024)
                .writeBufferCount(4)
                .queueIndexEntriesPerFile(1024)
                .keyIndexSlotsPerFile(256)
                .keyIndexEntriesPerFile(4096)
                .flushIntervalMillis(20)
                .commitIntervalMillis(10)
                .checkpointIntervalMillis(50);
    }

    /** Every write path under every flush mode. */
    public static List<Arguments> matrix() {
        List<Arguments> all = new ArrayList<>();
        for (WritePath path : WritePath.values()) {
            for (FlushMode mode : FlushMode.values()) {
                all.add(Arguments.of(path, mode));
            }
        }
        return all;
    }

    /** @return a deterministic body for message {@code sequence} of {@code producer} */
    public static byte[] body(long seed, int producer, long sequence, int size) {
        SplittableRandom random = new SplittableRandom(seed ^ (producer * 0x9E3779B97F4A7C15L) ^ sequence);
        byte[] body = new byte[size];
        random.nextBytes(body);
        byte[] label = (producer + ":" + sequence + ":").getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(label, 0, body, 0, Math.min(label.length, size));
        return body;
    }

    /** @return CRC32C of the bytes */
    public static long crc(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return crc.getValue();
    }
}
