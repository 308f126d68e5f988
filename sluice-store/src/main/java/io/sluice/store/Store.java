package io.sluice.store;

import io.sluice.store.internal.engine.StoreEngine;
import io.sluice.store.internal.recovery.RecoveryPlan;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * An embeddable message store: commit logs in segment files, a dense index per topic queue, a key index, and
 * every topic in the layout it was created with ({@link TopicLayout}): the shared log by default, or a log of
 * its own per topic or per queue.
 *
 * <h2>Appending</h2>
 * {@link #append} and {@link #appendBatch} encode the messages into one log record, index it, and return a
 * future that completes when the record is as durable as the {@link FlushMode} promises. Bad input (a bad
 * topic name, a negative queue id, an oversize message) throws {@link IllegalArgumentException}; a closed
 * store throws {@link IllegalStateException}; I/O failures complete the future exceptionally with a
 * {@link StoreException} ({@link DiskFullException} when the disk is full). A topic first appended to
 * without {@link #createTopic} lives in the shared log. Under SYNC, futures complete on the scheduler's
 * acknowledgement thread (a virtual thread per group commit by default), never on a store thread.
 *
 * <h2>Reading</h2>
 * A message is readable only once indexed, and under {@link FlushMode#SYNC} only once durable. Bodies are
 * views of store memory, valid until the {@link ReadResult} is closed.
 *
 * <h2>Durability</h2>
 * The store's {@code checkpoint} file holds each log's durable position: everything below it (the log's bytes,
 * its index entries, the names of its files) was forced first. Recovery trusts what lies below it and cuts
 * (and erases) an interrupted tail past it. One {@code clean-shutdown} marker covers every log.
 *
 * <h2>Layouts on disk</h2>
 * The shared log is the store directory's {@code log/}, {@code index/} and {@code keys/}; a TOPIC log lives in
 * {@code logs/<topic>/}, a QUEUE log in {@code logs/<topic>/<queueId>/}, each with its own three directories.
 * The file {@code topics} records which topics have logs of their own.
 *
 * <h2>Thread-safety</h2>
 * Every method is thread-safe. Appends to one log are serialised by that log's lock; appends to different
 * logs run in parallel; reads take no lock. Do not use read results after {@link #close()}.
 *
 * <p>This class is the store's API only: each method hands its call to the engine ({@code internal.engine}),
 * which checks the arguments and does the work.
 */
public final class Store implements AutoCloseable {

    private final StoreEngine engine;

    private Store(StoreEngine engine) {
        this.engine = engine;
    }

    /**
     * Opens the store in {@code directory}, creating it if the directory is absent or empty, and recovering
     * every log that was not closed cleanly.
     *
     * @param directory the store's directory
     * @param config the configuration, for every log of the store
     * @return the open store
     * @throws StoreCorruptedException if the directory is not a store, has an unknown format, a log is
     *     corrupt below its durable position, or the topic registry is damaged
     * @throws StoreException on I/O errors, or if the store is already open
     */
    public static Store open(Path directory, StoreConfig config) {
        return new Store(StoreEngine.open(directory, config, false));
    }

    /**
     * Opens an existing store to read it, creating, changing and deleting nothing, and running no background
     * work: no recovery, no retention, no checkpoint. A store that was not closed cleanly is shown up to each
     * log's durable position (what the last checkpoint claims); opening it for writing recovers the rest.
     * Appends and other changes throw {@link IllegalStateException}.
     *
     * @param directory the store's directory
     * @param config how to read it (the write path decides how segments are mapped)
     * @return the store, open for reading
     * @throws StoreException if there is no store, or it cannot be read without recovery (no checkpoint)
     */
    public static Store openReadOnly(Path directory, StoreConfig config) {
        return new Store(StoreEngine.open(directory, config, true));
    }

    /**
     * What opening the store for writing would do to each log, changing nothing: where recovery would scan from
     * and cut, how many bytes and segments it would drop, which valid records lie past each cut (by queue), and,
     * for a log a plain open would refuse (corruption below its durable position), why. With
     * {@code truncateOnCorruption} an open would cut such a log where the plan says.
     *
     * @param directory the store's directory
     * @param config how the store would be opened
     * @return the plan, by log name ("" for the shared log)
     * @throws StoreException if there is no store there, it is open, or it cannot be read
     */
    public static Map<String, RecoveryReport> planRecovery(Path directory, StoreConfig config) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(config, "config");
        return RecoveryPlan.of(directory, config);
    }

    /**
     * Creates a topic in a layout: where its messages will live, for good. Creating a SHARED topic is
     * optional (appending to a new topic creates it so). The layout is in force only once the registry that
     * records it is durable.
     *
     * @param topic the topic name
     * @param layout the layout
     * @throws IllegalArgumentException if the topic already exists in another layout
     * @throws StoreException if the registry cannot be written
     */
    public void createTopic(String topic, TopicLayout layout) {
        engine.topics().create(topic, layout);
    }

    /**
     * Creates a topic with a declared number of queues (Kafka's partitions): appends then take queue ids below
     * it, and {@link #queueCount} reports it. The declaration is durable before this returns.
     *
     * @param topic the topic name
     * @param layout the layout
     * @param queueCount the number of queues, 1 to {@link StoreConfig#maxQueuesPerTopic}
     * @return true if created; false if the topic already had a declared queue count (nothing changes)
     * @throws IllegalArgumentException if the topic already exists in another layout, or holds messages in a queue
     *     at or above {@code queueCount}
     * @throws StoreException if the registry cannot be written
     */
    public boolean createTopic(String topic, TopicLayout layout, int queueCount) {
        return engine.topics().create(topic, layout, queueCount);
    }

    /**
     * Creates a topic with a declared number of queues and its configs, durable together before this returns (one
     * registry save). Configs are names and values the store keeps for the caller; the store itself reads
     * {@link #RETENTION_MS}, {@link #RETENTION_BYTES} and {@link #CLEANUP_POLICY} (see {@link #setTopicConfigs}).
     *
     * @return true if created; false if the topic already had a declared queue count (nothing changes, its configs
     *     included)
     * @throws IllegalArgumentException as {@link #createTopic(String, TopicLayout, int)}, or for a config name longer
     *     than 65,535 bytes or more than 65,535 configs
     * @throws StoreException if the registry cannot be written
     */
    public boolean createTopic(String topic, TopicLayout layout, int queueCount, Map<String, String> configs) {
        return engine.topics().create(topic, layout, queueCount, configs);
    }

    /**
     * Creates a topic with a declared number of queues, its configs and its id, durable together before this returns
     * (one registry save). The id is the caller's (Kafka's topic id, chosen at random by the broker): the store keeps
     * it with the topic, refuses it for another, and forgets it when the topic is deleted.
     *
     * @param topicId the topic's id; not the zero UUID, and no other topic's
     * @return true if created; false if the topic already had a declared queue count (nothing changes, its id
     *     included)
     * @throws IllegalArgumentException as {@link #createTopic(String, TopicLayout, int, Map)}, or for an id that is
     *     zero or another topic's
     * @throws StoreException if the registry cannot be written
     */
    public boolean createTopic(String topic, TopicLayout layout, int queueCount, Map<String, String> configs,
                               UUID topicId) {
        Objects.requireNonNull(topicId, "topicId");
        return engine.topics().create(topic, layout, queueCount, configs, topicId);
    }

    /**
     * Gives topics created without an id (by a store from before ids, or without one) their ids, durable before this
     * returns (one registry save for all of them). A topic that has the id given already is left as it is.
     *
     * @param topicIds the id of each topic, by topic
     * @throws IllegalArgumentException if a topic has no declared queue count or another id, or an id is zero, given
     *     twice or another topic's (nothing changes then)
     * @throws StoreException if the registry cannot be written
     */
    public void setTopicIds(Map<String, UUID> topicIds) {
        engine.topics().setIds(topicIds);
    }

    /** @return the topic's id, or null for a topic without one, or unknown */
    public UUID topicId(String topic) {
        return engine.topics().id(topic);
    }

    /** @return the topic whose id this is, or null if no topic has it */
    public String topicWithId(UUID topicId) {
        return engine.topics().topicOf(topicId);
    }

    /** @return every topic that has an id, and its id, sorted by name */
    public Map<String, UUID> topicIds() {
        return engine.topics().ids();
    }

    /** A topic config the store reads: how long a topic's messages are kept at least, in ms; -1 for ever. */
    public static final String RETENTION_MS = "retention.ms";
    /** A topic config the store reads: how large each of a topic's logs may grow, in bytes; -1 for no limit. */
    public static final String RETENTION_BYTES = "retention.bytes";
    /**
     * A topic config the store reads: a comma-separated list of {@code delete} and {@code compact}; without
     * {@code delete}, neither age nor size deletes the topic's messages (the disk ratios still do).
     */
    public static final String CLEANUP_POLICY = "cleanup.policy";

    /**
     * Replaces the configs of a topic created with a queue count, durable before this returns. The store reads
     * {@link #RETENTION_MS} and {@link #RETENTION_BYTES} in place of the store's {@link RetentionPolicy} for the
     * topic's logs, and {@link #CLEANUP_POLICY}, from the next retention pass on; a value it cannot read as a number
     * leaves the store's own. Other names are kept, not read.
     *
     * @throws IllegalArgumentException if the topic has no declared queue count, or for configs the registry cannot
     *     hold (as {@link #createTopic(String, TopicLayout, int, Map)})
     * @throws StoreException if the registry cannot be written
     */
    public void setTopicConfigs(String topic, Map<String, String> configs) {
        engine.topics().setConfigs(topic, configs);
    }

    /** @return the topic's configs, sorted by name; empty for a topic with none, or unknown */
    public Map<String, String> topicConfigs(String topic) {
        return engine.topics().configs(topic);
    }

    /**
     * Raises a topic's declared queue count (Kafka's CreatePartitions). Counts never go down.
     *
     * @param topic a topic created with a queue count
     * @param queueCount the new count, above the current one and at most {@link StoreConfig#maxQueuesPerTopic}
     * @throws IllegalArgumentException if the topic has no declared count, or the new one is not larger
     * @throws StoreException if the registry cannot be written
     */
    public void increaseQueueCount(String topic, int queueCount) {
        engine.topics().increaseQueueCount(topic, queueCount);
    }

    /** @return the topic's declared queue count; 0 for a topic created without one, or unknown */
    public int queueCount(String topic) {
        return engine.topics().queueCount(topic);
    }

    /** @return every topic with a declared queue count, and that count, sorted by name */
    public Map<String, Integer> declaredTopics() {
        return engine.topics().declared();
    }

    /**
     * Deletes a topic that has a log of its own (TOPIC or QUEUE layout), for good: its messages, indexes, declared
     * queue count and every consumer position on it. Durable when this returns: the topic registry no longer
     * names it, and its directory is gone (a crash part way removes the rest at the next open). Appends on their
     * way to the topic fail with {@link TopicDeletedException}; reads in progress may fail. An append after this
     * returns creates the topic anew, in the shared log, as for any new topic.
     *
     * <p>A SHARED topic cannot be deleted: its messages lie between other topics' in the shared log, and leave
     * with retention only.
     *
     * @param topic the topic
     * @return false if there is no such topic
     * @throws IllegalArgumentException if the topic lives in the shared log
     * @throws StoreException if the registry could not be saved (the topic is still there), or if the topic was
     *     deleted but some of its files could not be removed (the next open removes them)
     */
    public boolean deleteTopic(String topic) {
        return engine.topics().delete(topic);
    }

    /**
     * Removes the batches of a queue of a BATCHES topic from {@code offset} on, as a Raft follower cuts its log back to
     * its leader's: the queue's next offset becomes {@code offset}, and the next append gets it. Durable when this
     * returns; a crash part way leaves the queue either as it was or cut at {@code offset}, never between. The
     * bytes are erased and later segments deleted (recovery's torn-tail cut), so no truncated batch can come back.
     *
     * <p>The queue's log closes (everything appended is forced), the checkpoint is lowered to the cut, the batch
     * header at the cut is erased and forced, and the log opens again through recovery, which finds its end there.
     * Appends to the queue wait meanwhile and go to the truncated log; a read of the queue in progress may fail with
     * a {@link StoreException} that says to read again. Consumer positions past the cut are left as they are.
     *
     * @param offset the first offset to remove: the first offset of a batch, from the queue's first stored offset
     *     up to its next offset (which removes nothing)
     * @throws IllegalArgumentException if the topic is not BATCHES or no batch of the queue starts at {@code offset}
     * @throws StoreException if the log is not writable or a file operation failed (the queue is then as it was, or
     *     cut, and opens again by recovery at its next use)
     */
    public void truncateQueue(String topic, int queueId, long offset) {
        engine.truncation().truncate(topic, queueId, offset);
    }

    /**
     * Removes every batch of a queue of a BATCHES topic and makes {@code offset} its next offset, as a Raft follower
     * starts again at its leader's first offset once the leader's retention removed the batches before it. The
     * queue's first offset is then {@code offset} too: offsets below it read as removed by retention. Durable when
     * this returns. A crash part way leaves the queue as it was or empty, its next offset then at most the greater of
     * {@code offset} and the queue's first offset before the call, never holding a batch it did not hold.
     *
     * <p>The queue is first truncated at its first stored offset ({@link #truncateQueue}), then its index starts
     * again at {@code offset}, and the store is forced and checkpointed ({@link #sync}).
     *
     * @param offset the queue's next offset; any offset from 0, below or past its current next offset
     * @throws IllegalArgumentException if the topic is not BATCHES or {@code offset} is negative
     * @throws IllegalStateException if a batch was appended to the queue while it was emptied
     * @throws StoreException if the log is not writable or a file operation failed
     */
    public void emptyQueueAt(String topic, int queueId, long offset) {
        engine.truncation().emptyAt(topic, queueId, offset);
    }

    /**
     * Deletes a queue's records below {@code offset} (Kafka's DeleteRecords): its first offset becomes {@code offset},
     * and reads below it find nothing ({@link ReadResult.Status#OFFSET_TOO_SMALL}), durably before this returns
     * (the {@code log-starts} file, docs/format.md), and only once every record appended before the call is forced
     * ({@link #sync}). Retention deletes the segments wholly below it at its next pass
     * (a queue of its own's log; in a shared log, once every queue there is past them). A call never lowers a first
     * offset: an offset at or below the queue's first changes nothing. It comes down only with the queue's end: if
     * the queue ends below it (a power cut took records past what was forced, or it was truncated or emptied below
     * it), it comes down to the end before the queue takes appends there, so that they never read as deleted.
     *
     * @param offset the queue's new first offset, from 0 to its next offset
     * @return the queue's first offset after the call
     * @throws IllegalArgumentException if {@code offset} is negative or past the queue's next offset
     * @throws StoreException if the file cannot be saved (nothing changed), or if it may or may not have been (the
     *     store is then read-only)
     */
    public long deleteRecords(String topic, int queueId, long offset) {
        // The start names records below it as having been there: they are forced first, so that no power cut leaves
        // the saved start past the queue's end (where the next records appended would then read as deleted).
        sync();
        return engine.deletion().deleteBefore(topic, queueId, offset);
    }

    /**
     * Compacts a BATCHES topic's queue: each sealed segment whose batches all lie below {@code endOffset} and were
     * forced is read batch by batch, oldest first, and rewritten with what {@code cleaner} keeps of each, in place
     * of the segment (docs/format.md, "Compaction"). Offsets do not change: a batch the cleaner drops leaves a gap
     * that reads step over, and a fetch from an offset in it starts at the next batch kept. The rewrite is
     * crash-safe: a crash at any point leaves the segment as it was or as rewritten, never a mix. Reads go on
     * meanwhile, appends too (they pause only while a rewritten segment is swapped in).
     *
     * @param endOffset no batch holding an offset at or past this is touched (Kafka's first uncleanable offset), nor
     *     one at or past a retention hold on the queue ({@link #holdRetention}: its holder reads them back as stored)
     * @return what it did
     * @throws IllegalArgumentException if the topic is not a BATCHES topic, or the cleaner returned a batch the
     *     store refuses (the segment is then left as it was)
     * @throws StoreException on an I/O error: before a copy took its segment's name nothing of the log changed;
     *     after, the log turns read-only and the next open rebuilds its indexes
     */
    public CompactionReport compact(String topic, int queueId, long endOffset, BatchCleaner cleaner) {
        return engine.compact(topic, queueId, endOffset, cleaner);
    }

    /**
     * @return the bytes the log holding a queue keeps from the record of {@code fromOffset} (or the queue's first, if
     *     later) to its end: for a BATCHES or QUEUE topic, whose queue has a log of its own, what the queue's records
     *     from there take (with a compacted segment's unused tail, which takes no disk block); 0 for an unknown queue
     */
    public long bytesFrom(String topic, int queueId, long fromOffset) {
        return engine.reads().bytesFrom(topic, queueId, fromOffset);
    }

    /** @return the topic's layout (SHARED for a topic never created otherwise) */
    public TopicLayout layout(String topic) {
        return engine.topics().layout(topic);
    }

    /**
     * Appends one message to a topic queue.
     *
     * @param topic topic name: 1-249 characters of {@code [a-zA-Z0-9._-]}, not "." or ".."
     * @param queueId queue id: zero or more, below {@link StoreConfig#maxQueuesPerTopic}
     * @param message the message
     * @return completes with the message's queue offset and log position once durable per the flush mode
     */
    public CompletableFuture<AppendResult> append(String topic, int queueId, Message message) {
        return engine.appends().append(topic, queueId, message);
    }

    /**
     * Appends messages as one record covering consecutive queue offsets: all or none are stored.
     *
     * @param topic topic name
     * @param queueId queue id
     * @param messages one or more messages
     * @return completes with the first message's queue offset once durable per the flush mode
     */
    public CompletableFuture<AppendResult> appendBatch(String topic, int queueId, List<Message> messages) {
        return engine.appends().appendBatch(topic, queueId, messages);
    }

    /**
     * Appends an opaque batch: one body in its producer's own framing (a Kafka record batch, say) that covers
     * {@code count} consecutive queue offsets and is kept as it is, except that the store writes the first of
     * those offsets into the body's first 8 bytes (big-endian) as it appends, as a broker stamps offsets into the
     * batches it stores. Reads return it as one {@link StoredMessage} whose {@link StoredMessage#opaqueCount()}
     * is {@code count}; {@link #sliceOpaque} sends such bodies to a socket with no copy. It has no keys.
     *
     * @param topic topic name
     * @param queueId queue id
     * @param body the batch, 8 bytes or more and at most {@link StoreConfig#maxMessageBytes()}; read during the
     *     call only
     * @param count offsets the batch covers, 1 or more
     * @return completes with the first offset once durable per the flush mode
     */
    public CompletableFuture<AppendResult> appendOpaque(String topic, int queueId, MemorySegment body, int count) {
        return engine.appends().appendOpaque(topic, queueId, body, count, Durability.FLUSH_MODE, false);
    }

    /**
     * {@link #appendOpaque(String, int, MemorySegment, int)}, its future completing once the append is as durable as
     * {@code durability} asks: the store decides from its flush mode and write path what is forced first.
     *
     * @param durability what the append's completion promises
     */
    public CompletableFuture<AppendResult> appendOpaque(String topic, int queueId, MemorySegment body, int count,
                                                        Durability durability) {
        return engine.appends().appendOpaque(topic, queueId, body, count, durability, false);
    }

    /**
     * {@link #appendOpaque(String, int, MemorySegment, int, Durability)} to a topic created with a declared queue
     * count only, as a broker appends to its topics: an append to a topic that is not declared (never created, or
     * deleted while the append was on its way) fails with {@link TopicDeletedException} and creates nothing.
     */
    public CompletableFuture<AppendResult> appendOpaqueToDeclared(String topic, int queueId, MemorySegment body,
                                                                  int count, Durability durability) {
        return engine.appends().appendOpaque(topic, queueId, body, count, durability, true);
    }

    /**
     * Appends a gap to a BATCHES topic's queue: its next {@code count} offsets hold no record, and reads step over
     * them, as over the gap compaction leaves where it dropped batches ({@link #compact}). For a replica that copies
     * a compacted log batch by batch.
     *
     * @param maxTimestamp the time its offsets are indexed at
     */
    public CompletableFuture<AppendResult> appendGap(String topic, int queueId, int count, long maxTimestamp,
                                                     Durability durability) {
        return engine.appends().appendGap(topic, queueId, count, maxTimestamp, durability);
    }

    /**
     * Appends a Kafka record batch checked by {@link KafkaBatch#check} (its CRC32C is not computed again) to a topic
     * created with a declared queue count, as {@link #appendOpaqueToDeclared} does: the batch covers its
     * {@link KafkaBatch#offsetCount()} offsets.
     *
     * @param batch the checked batch; read during the call only
     * @param durability what the append's completion promises
     */
    public CompletableFuture<AppendResult> appendKafkaBatch(String topic, int queueId, KafkaBatch batch,
                                                            Durability durability) {
        return engine.appends().appendKafkaBatch(topic, queueId, batch, durability);
    }

    /**
     * Reads messages from a queue.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxMessages most messages to return, 1 or more
     * @param maxBytes most body bytes to return, 1 or more; the first message is returned even if larger
     * @return the messages (views of store memory) and the offset to continue from; close it when done
     * @throws StoreCorruptedException if the index or the log is damaged where the messages should be
     */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        return engine.reads().read(topic, queueId, fromOffset, maxMessages, maxBytes);
    }

    /**
     * Sends a queue's records, as stored, to a channel with no copy through the Java heap (see
     * docs/store.md, "Zero-copy transfer"). Whole records are sent, so the first may be a batch that starts
     * before {@code fromOffset}: the receiver skips messages below it. A BATCHES topic's records are its Kafka
     * record batches, with no store framing.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most bytes to send, 1 or more; at least one record is sent if any is readable
     * @param target a blocking channel (a socket, a pipe, a file)
     * @return what was sent and the offset to continue from
     * @throws StoreException if writing to the channel or reading the log failed
     */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        return engine.reads().transferTo(topic, queueId, fromOffset, maxBytes, target);
    }

    /**
     * Chooses the opaque batches ({@link #appendOpaque}) to send from a queue, from the one holding
     * {@code fromOffset} on, up to {@code maxBytes} of bodies (at least one batch if any is readable), stopping
     * before a record of messages. Send them with {@link OpaqueSlice#transferTo}: with no copy through the Java
     * heap when the target is a socket (see docs/store.md, "Zero-copy transfer").
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most body bytes, 1 or more
     * @return the slice: its status, the batches' total size and the offset to continue from
     * @throws StoreCorruptedException if the index or the log is damaged where the batches should be
     */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes) {
        return sliceOpaque(topic, queueId, fromOffset, maxBytes, Long.MAX_VALUE);
    }

    /**
     * As {@link #sliceOpaque(String, int, long, long)}, taking no batch that starts at or past {@code untilOffset}
     * (a replicated partition's high watermark: what lies past it is not committed yet).
     */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        return engine.reads().sliceOpaque(topic, queueId, fromOffset, maxBytes, untilOffset);
    }

    /**
     * Reads the record stored at a position of the shared log (as returned in {@link AppendResult#logPosition()}
     * for a SHARED topic; positions of logs of their own are read through {@link #read}).
     *
     * @param logPosition the record's position
     * @return the record's messages
     * @throws IllegalArgumentException if the position is not readable or no record starts there
     */
    public ReadResult readAt(long logPosition) {
        return engine.reads().readAt(logPosition);
    }

    /**
     * Finds the messages of a topic that carry a key (RocketMQ's query by key), newest first, through the key
     * index: no log scan. Every candidate record is re-read and its topic and keys compared, so a hash
     * collision never returns another key's message. For a QUEUE topic every queue's log is asked.
     *
     * @param topic the topic
     * @param key the key, not empty
     * @param maxResults most messages to return, 1 or more
     * @param fromMillis earliest store time, epoch ms, 0 or more
     * @param toMillis latest store time, epoch ms, at or after {@code fromMillis}
     * @return the messages (views of store memory); close it when done
     */
    public LookupResult lookupByKey(String topic, String key, int maxResults, long fromMillis, long toMillis) {
        return engine.reads().lookupByKey(topic, key, maxResults, fromMillis, toMillis);
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        return engine.reads().minOffset(topic, queueId);
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        return engine.reads().maxOffset(topic, queueId);
    }

    /**
     * @return the offset the queue's next append gets: past every message appended, forced or not ({@link #maxOffset}
     *     shows what readers may see, which under SYNC is what was forced); 0 for an unknown queue
     */
    public long nextOffset(String topic, int queueId) {
        return engine.reads().nextOffset(topic, queueId);
    }

    /**
     * Finds the first message stored at or after a time, by binary search over the queue index.
     *
     * @param epochMillis the time
     * @return the offset of the first readable message whose store timestamp is at or after the time, or
     *     {@link #maxOffset} if there is none
     */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        return engine.reads().offsetForTimestamp(topic, queueId, epochMillis);
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        return engine.reads().topics();
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        return engine.reads().queues(topic);
    }

    /**
     * Registers (or moves) a consumer group's position on a queue: the next offset it will read. Retention
     * keeps every segment holding messages at or after a registered position (and the last saved one),
     * unless the disk passes the emergency ratio. Positions are saved with each checkpoint and at close;
     * after a crash a group resumes at most one checkpoint interval back.
     *
     * @param group the consumer group: 1-249 characters of {@code [a-zA-Z0-9._-]}
     * @param topic the topic
     * @param queueId the queue
     * @param nextOffset the next offset the group will read, 0 or more
     */
    public void commitOffset(String group, String topic, int queueId, long nextOffset) {
        engine.consumers().commit(group, topic, queueId, nextOffset);
    }

    /**
     * Holds retention back on a queue: every segment holding its messages at or after {@code offset} is kept (unless
     * the disk passes the emergency ratio), as for a consumer group's position, until the holder moves the hold. Kept
     * in memory only and not a consumer position (no group lists it): a Raft replica holds the batches its log still
     * names, and sets the hold again when it starts.
     *
     * @param holder who holds, named in retention's log lines when the hold stops a deletion
     * @param offset the first offset to keep; {@link Long#MAX_VALUE} holds nothing
     */
    public void holdRetention(String holder, String topic, int queueId, long offset) {
        engine.consumers().hold(holder, topic, queueId, offset);
    }

    /** @return the group's registered position on the queue, if any */
    public OptionalLong committedOffset(String group, String topic, int queueId) {
        return engine.consumers().committed(group, topic, queueId);
    }

    /** @return every registered consumer position, sorted by group, topic and queue */
    public List<ConsumerPosition> consumerPositions() {
        return engine.consumers().all();
    }

    /** Forgets every position of a consumer group, so retention no longer holds data for it. @return true if it had any */
    public boolean removeConsumerGroup(String group) {
        return engine.consumers().removeGroup(group);
    }

    /**
     * Forgets a consumer group's position on one queue (Kafka's OffsetDelete), saved as a commit is.
     *
     * @return true if the group had a position there and it is gone
     */
    public boolean removeCommittedOffset(String group, String topic, int queueId) {
        return engine.consumers().removeOffset(group, topic, queueId);
    }

    /**
     * Forgets every position of a consumer group that has committed none since {@code cutoffMillis} (store clock), as
     * one step with respect to {@link #commitOffset}: a commit at or after the cutoff keeps the whole group. For
     * expiring the positions of groups nobody uses any more, which would otherwise hold retention back for ever.
     *
     * @return true if the group had positions and they are gone
     */
    public boolean removeConsumerGroupIfIdle(String group, long cutoffMillis) {
        return engine.consumers().removeGroupIfIdle(group, cutoffMillis);
    }

    /**
     * Runs one retention pass on every log now, as the store does every
     * {@link RetentionPolicy#checkIntervalMillis()}. {@code retentionBytes} applies to each log.
     *
     * @return what the passes did together: counts summed, the first reason and holding group found
     * @throws StoreException if deleting files failed
     */
    public RetentionReport enforceRetention() {
        return engine.enforceRetention();
    }

    /**
     * Forces everything appended before the call, in every log with its index files, and records it in the
     * checkpoint: what a scheduled checkpoint does, now and waited for. Once it returns, a power cut loses none of
     * it, whatever the flush mode. For a caller that must not claim data as kept before it is (a replica's
     * snapshot).
     *
     * @throws StoreException if the store is closed or read-only, a log could not be forced (it turned read-only),
     *     or the checkpoint could not be written
     */
    public void sync() {
        engine.sync();
    }

    /** @return a snapshot of the shared log's state and positions (see {@link #ownLogStatuses()} for the rest) */
    public StoreStatus status() {
        return engine.status();
    }

    /**
     * @return the state of each log of its own, by {@code <topic>} or {@code <topic>/<queueId>}, sorted; a log closed
     *     while idle is shown as it closed (forced whole, nothing mapped), and is not opened for this
     */
    public Map<String, StoreStatus> ownLogStatuses() {
        return engine.ownLogStatuses();
    }

    /**
     * @return how many logs of their own are open now, holding their files and mappings: at most
     *     {@link StoreConfig#resolvedMaxOpenLogs()}, but for the logs in use at once (an append or read running, a read
     *     result not closed yet), which are not closed while in use
     */
    public int openLogCount() {
        return engine.openLogCount();
    }

    /** @return true if the last open found every log cleanly shut down and skipped recovery */
    public boolean openedClean() {
        return engine.openedClean();
    }

    /**
     * @return what recovery found and did to each log at open, by log name ("" for the shared log); a log of its own
     *     not opened since a clean shutdown (logs open on first use) reports what a clean open finds
     */
    public Map<String, RecoveryReport> recoveryReports() {
        return engine.recoveryReports();
    }

    /** @return true if the store was opened with {@link #openReadOnly} */
    public boolean readOnly() {
        return engine.readOnly();
    }

    /** @return the store's directory */
    public Path directory() {
        return engine.directory();
    }

    /** @return the configuration */
    public StoreConfig config() {
        return engine.config();
    }

    /**
     * Closes every log: stops appends, waits for pending SYNC appends, forces everything, writes the checkpoint
     * and the clean-shutdown marker (unless a log failed), then unmaps and closes every file. Idempotent.
     *
     * @throws StoreException if closing failed; every log is still closed
     */
    @Override
    public void close() {
        engine.close();
    }
}
