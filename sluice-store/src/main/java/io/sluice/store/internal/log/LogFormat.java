package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What a log's records are: how to find, frame, check and size a record at a position, and what it indexes. It is
 * the one place where the two kinds of log differ, for the code that walks a log ({@link LogWalker}: recovery, the
 * verifier), appends to it and reads it by its index entries. A log holds one of two formats:
 * <ul>
 * <li>{@link RecordLogFormat}: store records ({@link RecordFormat}), each with its own header (topic, queue, first
 *     offset, store time) and its own log position inside its checksum. Records of many queues interleave; stale
 *     bytes never validate, since none carries the position they are found at.</li>
 * <li>{@link BatchLogFormat}: a BATCHES topic's queue, Kafka record batches back to back ({@link BatchFormat}). A
 *     batch names neither its topic and queue (the log's) nor its position nor its store time (its index entries
 *     hold that); stale bytes are kept out by the offset chain: each batch starts at the offset after the one
 *     before it.</li>
 * </ul>
 * Both end a segment with the store's filler record ({@link RecordFormat#encodeFiller}), or with fewer than
 * {@link RecordFormat#FILLER_BYTES} bytes left, which {@link LogWalker} treats as the segment's end before asking.
 *
 * <p>{@code data} is always one segment's bytes from its start ({@code data.byteSize()} its size) and {@code offset}
 * the record's place in it; {@code record} is a framed record's bytes, exactly.
 *
 * <p>Stateless; thread-safe.
 */
public sealed interface LogFormat permits RecordLogFormat, BatchLogFormat {

    /** {@link #storeTimestamp}: the format's records carry no store time. */
    long NO_STORE_TIME = Long.MIN_VALUE;
    /** {@link #frame}: no valid record there. */
    long INVALID = -1;
    /** {@link #frame}: the segment ends there (a filler record). */
    long SEGMENT_END = -2;

    /** @return the format of a log of store records (the shared log, a TOPIC or QUEUE topic's) */
    static LogFormat records() {
        return RecordLogFormat.INSTANCE;
    }

    /** @return the format of a BATCHES topic's log of one queue */
    static LogFormat batches(String topic, int queueId) {
        return new BatchLogFormat(topic, queueId);
    }

    /**
     * Frames what lies at {@code offset}, checking it whole (length, magic, checksum, structure; a store record's own
     * position, a batch's place in its offset chain).
     *
     * @param position the log position of {@code offset}
     * @param previousEnd the queue offset after the record before this one in the walk, or -1 for none: a batch must
     *     start there; a store record ignores it (records of many queues interleave)
     * @return the record's length if a valid record starts there, {@link #SEGMENT_END} if a filler does, else
     *     {@link #INVALID}
     */
    long frame(MemorySegment data, long offset, long position, long previousEnd);

    /**
     * For a byte-by-byte search past damage: what could be a record that follows it. Cheap to reject (a magic
     * first), since it is asked at every byte.
     *
     * @param leastFirst the least first offset a batch found may carry (one with a lower one cannot follow: a batch
     *     held in another record's value, say); a store record ignores it
     * @return the length of the valid record or filler at {@code offset}, or {@link #INVALID}
     */
    long find(MemorySegment data, long offset, long position, long leastFirst);

    /**
     * Checks that the valid record at {@code offset} is the one a queue-index entry names. What a format does not
     * carry (a batch's topic, queue and store time) is not compared.
     *
     * @param size the record size the entry gives
     * @param firstOffset the record's first queue offset by the entry (its offset less its index in the record)
     * @param count the offset count the entry gives
     * @param storeTimestamp the store time the entry gives
     * @return true if it matches
     */
    boolean matchesEntry(MemorySegment data, long offset, long position, int size, String topic, int queueId,
                         long firstOffset, int count, long storeTimestamp);

    /** @return the topic of a framed record */
    String topic(MemorySegment record);

    /** @return the queue of a framed record */
    int queueId(MemorySegment record);

    /** @return the first queue offset a framed record covers */
    long firstOffset(MemorySegment record);

    /** @return how many queue offsets a framed record covers */
    int offsetCount(MemorySegment record);

    /**
     * @return true if a record carries its store time, so its index entries can be derived from it alone; false if
     *     its index entries hold what it does not (a batch's), and the forced ones are worth keeping
     */
    boolean recordsCarryStoreTime();

    /**
     * The store time a record's index entries get when it is indexed from the log: a store record's own; for a batch,
     * its producer's max timestamp capped at {@code nowMillis} and never below the entry before, so a queue's times
     * only grow (time lookups binary-search them).
     *
     * @param previous the store time of the queue's entry before the record (asked only if needed)
     */
    long indexTimestamp(MemorySegment record, LongSupplier previous, long nowMillis);

    /** Tells {@code visitor} the keys of each message of a framed record that has any, in order. */
    void forEachKeys(MemorySegment record, MessageKeys visitor) throws IOException;

    /**
     * Sizes the record an append of {@code messages} makes.
     *
     * @param topicBytes the topic, ASCII
     * @return the record's size in bytes
     * @throws IllegalArgumentException if such a log cannot hold them (a batch log takes one valid record batch)
     */
    long appendSize(String topic, byte[] topicBytes, PreparedMessage[] messages);

    /**
     * Writes the record of an append, sized by {@link #appendSize}, at the log's write position; does not publish it.
     *
     * @return the record's log position
     * @throws IOException if no segment could be had (ENOSPC) or the write failed
     */
    long append(CommitLog log, int size, long storeTimestamp, long firstQueueOffset, int queueId, byte[] topic,
                PreparedMessage[] messages) throws IOException;

    /**
     * @param topicLength the length of the topic of the queue read, in bytes
     * @return how many of a record's first bytes {@link #matchesHeader}, {@link #opaqueBodyOffset} and
     *     {@link #storeTimestamp} need
     */
    int headerBytes(int topicLength);

    /**
     * Checks, without a checksum, that a record's first bytes are those of the record an index entry names. A read
     * checks this before it serves anything, so a damaged index never serves another record's bytes or zeros.
     *
     * @param header the record's first {@link #headerBytes} bytes at least
     * @param size the record size the entry gives
     * @param position the record's log position
     * @param topic the queue's topic, ASCII
     * @return true if it matches
     */
    boolean matchesHeader(MemorySegment header, long size, long position, byte[] topic, int queueId,
                          long firstOffset, int count);

    /**
     * @param header the record's first {@link #headerBytes} bytes at least
     * @return where in the record its opaque body starts (the bytes a fetch sends), or -1 if it holds messages
     */
    long opaqueBodyOffset(MemorySegment header);

    /**
     * @param recordSize the size of a record its index entry gives
     * @return true if the record is a gap: it stands for offsets compaction removed, and readers skip it
     */
    default boolean isGap(int recordSize) {
        return false;
    }

    /**
     * @param header the record's first {@link #headerBytes} bytes at least
     * @return the store time the record carries, or {@link #NO_STORE_TIME} (a batch's is in its index entries)
     */
    long storeTimestamp(MemorySegment header);

    /** @return what one record is called in messages: "record" or "batch" */
    String recordName();

    /** Told the keys of one message of a record. */
    @FunctionalInterface
    interface MessageKeys {
        /**
         * @param indexInRecord the message's place in its record
         * @param keys its keys, not empty
         */
        void accept(int indexInRecord, List<String> keys) throws IOException;
    }
}
