package io.sluice.store.internal.retention;

import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registered consumer positions: for each (group, topic, queue), the next offset the group will read, and when
 * it was last committed (store clock). Retention keeps every segment a position still needs. Positions are saved
 * with each checkpoint (when they changed) and at close, so after a crash a group may resume up to one
 * checkpoint interval back: it reads some messages again, never skips one.
 *
 * <p>The file {@code consumers} is replaced atomically (temp file, fsync, rename, directory fsync).
 * Little-endian:
 * <pre>
 * offset size field
 *   0     4   magic     0x534C434F ("SLCO")
 *   4     2   version   2
 *   6     2   reserved  0
 *   8     4   count     number of entries
 *  12     -   entries   count times: u16 group length, group (ASCII), u16 topic length, topic (ASCII),
 *                       i32 queue id, i64 next offset, i64 committed at (epoch millis; version 2 only)
 *   -     4   crc       CRC32C of every byte before it
 * </pre>
 * A version 1 file (no commit times) is read with every position committed at the time it is loaded.
 * A file that fails its checks is renamed to {@code consumers.corrupt-<millis>} (kept for inspection) and
 * the store starts with no positions, which only means retention holds nothing back for them.
 *
 * <p>Thread-safe.
 */
public final class ConsumerOffsets {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerOffsets.class);

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "consumers";
    static final int MAGIC = 0x534C434F;
    static final short VERSION = 2;
    private static final short VERSION_WITHOUT_TIMES = 1;
    /** A commit of an unchanged offset is saved once its time moved this far: it only refreshes the time. */
    static final long COMMIT_TIME_SAVE_MILLIS = 60_000;
    private static final int HEADER_BYTES = 12;

    /** One registered position's key. */
    public record Key(String group, String topic, int queueId) {
    }

    private final Map<Key, Long> offsets = new ConcurrentHashMap<>();
    /** When each position was last committed, store clock; the same keys as {@link #offsets}. */
    private final Map<Key, Long> committedMillis = new ConcurrentHashMap<>();
    /** The positions as last saved: what a restart after a crash would resume from. */
    private volatile Map<Key, Long> saved = Map.of();
    /** The commit times as last saved; guarded by this. */
    private Map<Key, Long> savedMillis = Map.of();
    private volatile boolean dirty;
    /** Retention holds of the store's owner ({@code group} names the holder): in memory, never saved. */
    private final Map<Key, Long> holds = new ConcurrentHashMap<>();

    private ConsumerOffsets() {
    }

    /** @return the positions saved in {@code directory}, or none if there is no file */
    public static ConsumerOffsets load(FileIO io, Path directory, long nowMillis, boolean readOnly) throws IOException {
        ConsumerOffsets loaded = new ConsumerOffsets();
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return loaded;
        }
        byte[] bytes = FileTree.readAll(io, path);
        try {
            loaded.decode(bytes, nowMillis);
        } catch (RuntimeException e) {
            if (readOnly) {
                LOG.error("consumer positions file {} is damaged ({}); showing no registered positions", path,
                        e.getMessage());
                loaded.offsets.clear();
                loaded.committedMillis.clear();
                loaded.saved = Map.of();
                return loaded;
            }
            Path aside = directory.resolve(FILE_NAME + ".corrupt-" + nowMillis);
            io.rename(path, aside);
            io.syncDirectory(directory);
            LOG.error("consumer positions file {} is damaged ({}); moved it to {} and starting with no registered"
                    + " positions", path, e.getMessage(), aside);
            loaded.offsets.clear();
            loaded.committedMillis.clear();
        }
        loaded.saved = Map.copyOf(loaded.offsets);
        loaded.savedMillis = Map.copyOf(loaded.committedMillis);
        return loaded;
    }

    private void decode(byte[] bytes, long nowMillis) {
        if (bytes.length < HEADER_BYTES + 4) {
            throw new IllegalStateException("file is " + bytes.length + " bytes, shorter than its header");
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        if (buffer.getInt(bytes.length - 4) != (int) crc.getValue()) {
            throw new IllegalStateException("checksum mismatch");
        }
        short version = buffer.getShort(4);
        if (buffer.getInt(0) != MAGIC || version != VERSION && version != VERSION_WITHOUT_TIMES) {
            throw new IllegalStateException("unknown magic or version");
        }
        // A version 1 file is rewritten as version 2 at the next save, with the times it was given now.
        dirty = version != VERSION;
        int count = buffer.getInt(8);
        buffer.position(HEADER_BYTES).limit(bytes.length - 4);
        for (int i = 0; i < count; i++) {
            String group = string(buffer);
            String topic = string(buffer);
            int queueId = buffer.getInt();
            long offset = buffer.getLong();
            long committed = version == VERSION ? buffer.getLong() : nowMillis;
            Key key = new Key(group, topic, queueId);
            offsets.put(key, offset);
            committedMillis.put(key, committed);
        }
    }

    private static String string(ByteBuffer buffer) {
        byte[] bytes = new byte[Short.toUnsignedInt(buffer.getShort())];
        buffer.get(bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** Registers or moves a position (names already validated), committed at {@code nowMillis}. */
    public synchronized void commit(String group, String topic, int queueId, long nextOffset, long nowMillis) {
        Key key = new Key(group, topic, queueId);
        Long previous = offsets.put(key, nextOffset);
        committedMillis.put(key, nowMillis);
        Long savedAt = savedMillis.get(key);
        if (previous == null || previous != nextOffset || savedAt == null
                || nowMillis - savedAt >= COMMIT_TIME_SAVE_MILLIS) {
            dirty = true;
        }
    }

    /** @return the group's position on the queue, if registered */
    public OptionalLong get(String group, String topic, int queueId) {
        Long offset = offsets.get(new Key(group, topic, queueId));
        return offset == null ? OptionalLong.empty() : OptionalLong.of(offset);
    }

    /** Forgets a group's position on one queue. @return true if it had one */
    public boolean removeOffset(String group, String topic, int queueId) {
        Key key = new Key(group, topic, queueId);
        return remove(key::equals);
    }

    /** Forgets every position of a group. @return true if it had any */
    public boolean removeGroup(String group) {
        return remove(key -> key.group().equals(group));
    }

    /**
     * Forgets every position of a group if none was committed at or after {@code cutoffMillis}; atomic with
     * {@link #commit}, so a commit racing the removal either keeps the group or is itself removed.
     *
     * @return true if the group had positions and they are gone
     */
    public synchronized boolean removeGroupIfIdle(String group, long cutoffMillis) {
        for (Map.Entry<Key, Long> entry : committedMillis.entrySet()) {
            if (entry.getKey().group().equals(group) && entry.getValue() >= cutoffMillis) {
                return false;
            }
        }
        return removeGroup(group);
    }

    /** Forgets every group's positions on a topic. @return true if there were any */
    public boolean removeTopic(String topic) {
        holds.keySet().removeIf(key -> key.topic().equals(topic));
        return remove(key -> key.topic().equals(topic));
    }

    /** Sets a retention hold: retention keeps the queue's messages from {@code offset} on, as for a position. */
    public void hold(String holder, String topic, int queueId, long offset) {
        holds.put(new Key(holder, topic, queueId), offset);
    }

    private synchronized boolean remove(java.util.function.Predicate<Key> which) {
        boolean removed = offsets.keySet().removeIf(which);
        committedMillis.keySet().removeIf(which);
        if (removed) {
            dirty = true;
        }
        return removed;
    }

    /** @return when the position was last committed (store clock), or -1 if it is not registered */
    public long committedMillis(Key key) {
        return committedMillis.getOrDefault(key, -1L);
    }

    /** @return a snapshot of every position */
    public Map<Key, Long> snapshot() {
        return Map.copyOf(offsets);
    }

    /**
     * @param includePositions whether consumer positions count, or only the retention holds
     * @return for each position, the lower of the current one and the one last saved (retention must keep data
     *     for the saved position too, since after a crash the group resumes from there), and each retention hold
     */
    public Map<Key, Long> protectedPositions(boolean includePositions) {
        Map<Key, Long> lowest = new java.util.HashMap<>();
        if (includePositions) {
            lowest.putAll(offsets);
            saved.forEach((key, offset) -> lowest.merge(key, offset, Math::min));
        }
        holds.forEach((key, offset) -> lowest.merge(key, offset, Math::min));
        return lowest;
    }

    /** Writes the positions atomically into {@code directory} if they changed since the last save. */
    public void saveIfDirty(FileIO io, Path directory) throws IOException {
        if (!dirty) {
            return;
        }
        dirty = false;
        try {
            save(io, directory);
        } catch (IOException | RuntimeException e) {
            dirty = true;
            throw e;
        }
    }

    private void save(FileIO io, Path directory) throws IOException {
        Map<Key, Long> snapshot;
        Map<Key, Long> times;
        synchronized (this) {
            snapshot = Map.copyOf(offsets);
            times = Map.copyOf(committedMillis);
        }
        List<Map.Entry<Key, Long>> entries = new ArrayList<>(snapshot.entrySet());
        int size = HEADER_BYTES + 4;
        for (Map.Entry<Key, Long> entry : entries) {
            size += 2 + entry.getKey().group().length() + 2 + entry.getKey().topic().length() + 4 + 8 + 8;
        }
        ByteBuffer buffer = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putShort(VERSION).putShort((short) 0).putInt(entries.size());
        for (Map.Entry<Key, Long> entry : entries) {
            Key key = Objects.requireNonNull(entry.getKey());
            putString(buffer, key.group());
            putString(buffer, key.topic());
            buffer.putInt(key.queueId()).putLong(entry.getValue()).putLong(times.getOrDefault(key, 0L));
        }
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, size - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, FILE_NAME, buffer);
        saved = snapshot;
        synchronized (this) {
            savedMillis = times;
        }
    }

    private static void putString(ByteBuffer buffer, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
        buffer.putShort((short) bytes.length).put(bytes);
    }
}
