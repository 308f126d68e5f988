package io.sluice.broker.kafka;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The log cleaner's map from a record key to the latest offset holding it, as Kafka's SkimpyOffsetMap: a key is kept
 * as a 128-bit hash (MurmurHash3 x64, far cheaper than the MD5 Kafka takes, and as unlikely to collide: two keys of
 * one partition would have to share 128 bits), with open addressing over three parallel long arrays, 24 bytes a key.
 * It starts small and doubles as keys come, up to its limit; past that, {@link #full} tells the cleaner to stop
 * where it is, as Kafka's does. Not thread-safe.
 */
final class OffsetMap {

    private static final long C1 = 0x87c37b91114253d5L;
    private static final long C2 = 0x4cf5ad432745937fL;
    private static final int INITIAL_SLOTS = 1 << 12;
    /** The share of slots in use beyond which the map doubles, or is full (Kafka's log.cleaner.io.buffer.load.factor). */
    private static final double LOAD_FACTOR = 0.9;

    private final int maxSlots;
    private long[] high;
    private long[] low;
    /** The offset of each slot's key, -1 where the slot is empty. */
    private long[] offsets;
    private int size;
    // The last hash computed, so that a put after a get of one key hashes it once.
    private long hashHigh;
    private long hashLow;

    /** @param maxBytes the most memory the map takes (24 bytes a slot) */
    OffsetMap(long maxBytes) {
        long slots = Long.highestOneBit(Math.max(INITIAL_SLOTS, maxBytes / 24));
        this.maxSlots = (int) Math.min(slots, 1 << 30);
        allocate(Math.min(INITIAL_SLOTS, maxSlots));
    }

    private void allocate(int slots) {
        high = new long[slots];
        low = new long[slots];
        offsets = new long[slots];
        Arrays.fill(offsets, -1);
    }

    /** Forgets every key, keeping the memory taken. */
    void clear() {
        Arrays.fill(offsets, -1);
        size = 0;
    }

    /** @return the keys held */
    int size() {
        return size;
    }

    /** @return true if {@code more} keys may not all fit any more: the cleaner stops before the batch that has them */
    boolean full(int more) {
        return size + (long) more > maxSlots * LOAD_FACTOR;
    }

    /** Records that {@code key} (its remaining bytes) is held at {@code offset}, if later than what is held. */
    void put(ByteBuffer key, long offset) {
        if (size + 1 > offsets.length * LOAD_FACTOR && offsets.length < maxSlots) {
            grow();
        }
        hash(key);
        int slot = find(hashHigh, hashLow);
        if (offsets[slot] < 0) {
            high[slot] = hashHigh;
            low[slot] = hashLow;
            offsets[slot] = offset;
            size++;
        } else if (offset > offsets[slot]) {
            offsets[slot] = offset;
        }
    }

    /** @return the latest offset held for {@code key}, or -1 if it is not held */
    long get(ByteBuffer key) {
        hash(key);
        return offsets[find(hashHigh, hashLow)];
    }

    /** @return the slot holding the hash, or the empty slot where it would go */
    private int find(long h1, long h2) {
        int mask = offsets.length - 1;
        int slot = (int) (h1 ^ (h1 >>> 32)) & mask;
        while (offsets[slot] >= 0 && (high[slot] != h1 || low[slot] != h2)) {
            slot = (slot + 1) & mask;
        }
        return slot;
    }

    private void grow() {
        long[] oldHigh = high;
        long[] oldLow = low;
        long[] oldOffsets = offsets;
        allocate(oldOffsets.length * 2);
        for (int i = 0; i < oldOffsets.length; i++) {
            if (oldOffsets[i] >= 0) {
                int slot = find(oldHigh[i], oldLow[i]);
                high[slot] = oldHigh[i];
                low[slot] = oldLow[i];
                offsets[slot] = oldOffsets[i];
            }
        }
    }

    /** MurmurHash3 x64 128 (seed 0) of the key's remaining bytes, into {@link #hashHigh} and {@link #hashLow}. */
    private void hash(ByteBuffer key) {
        ByteBuffer bytes = key.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int length = bytes.remaining();
        int at = bytes.position();
        long h1 = 0;
        long h2 = 0;
        int blocks = length / 16;
        for (int i = 0; i < blocks; i++, at += 16) {
            long k1 = bytes.getLong(at);
            long k2 = bytes.getLong(at + 8);
            h1 ^= mixK1(k1);
            h1 = Long.rotateLeft(h1, 27) + h2;
            h1 = h1 * 5 + 0x52dce729;
            h2 ^= mixK2(k2);
            h2 = Long.rotateLeft(h2, 31) + h1;
            h2 = h2 * 5 + 0x38495ab5;
        }
        long k1 = 0;
        long k2 = 0;
        int tail = length & 15;
        for (int i = tail - 1; i >= 8; i--) {
            k2 = (k2 << 8) | (bytes.get(at + i) & 0xFF);
        }
        for (int i = Math.min(tail, 8) - 1; i >= 0; i--) {
            k1 = (k1 << 8) | (bytes.get(at + i) & 0xFF);
        }
        h2 ^= tail > 8 ? mixK2(k2) : 0;
        h1 ^= tail > 0 ? mixK1(k1) : 0;
        h1 ^= length;
        h2 ^= length;
        h1 += h2;
        h2 += h1;
        h1 = fmix(h1);
        h2 = fmix(h2);
        h1 += h2;
        h2 += h1;
        hashHigh = h1;
        hashLow = h2;
    }

    private static long mixK1(long k1) {
        return Long.rotateLeft(k1 * C1, 31) * C2;
    }

    private static long mixK2(long k2) {
        return Long.rotateLeft(k2 * C2, 33) * C1;
    }

    private static long fmix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb93fe53f8ba9L;
        k ^= k >>> 33;
        return k;
    }
}
