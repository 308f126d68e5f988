package io.sluice.cluster;

import io.sluice.store.Store;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica installing its leader's snapshot: the leader's log starts after this replica's ends (it was away long, or
 * lost its data). The snapshot's state is the partition's batches up to its offset, which the leader's store holds:
 * the replica asks the leader for its latest snapshot ({@code snapshot}) and first stored offset ({@code first}), cuts
 * its own store back to what it knows committed (or empties it where the copy can start), copies the leader's batches
 * from there to the snapshot's offset ({@code read <from> <until>}, a MiB at a time), forces them, and records the
 * snapshot; Ratis's log goes on from there. The queries are those {@link PartitionStateMachine#query} answers, sent as
 * {@link LeaderSnapshots stale reads}.
 */
final class PartitionInstall {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionInstall.class);

    /** The installing replica's side. */
    interface Replica {
        /** @return the replica's group */
        RaftGroupId groupId();

        /** @return the replica's Raft log */
        RaftLog log() throws IOException;

        /** @return the offset below which the replica knows every batch committed */
        long highWatermark();

        /** @return the end of the batches an install that did not finish copied (committed; the next resumes) */
        long copiedEnd();

        /** Notes the end of the batches copied so far. */
        void copied(long end);

        /**
         * Records the snapshot, its batches forced: the replica's state is the snapshot's from now on, its log start
         * {@code logStart}.
         */
        void installed(TermIndex at, long end, long logStart) throws IOException;
    }

    private final Store store;
    private final PartitionStore batches;
    private final ClusterNode.PartitionId id;
    private final LeaderSnapshots.LeaderClients leaders;
    private final Replica replica;

    /**
     * @param store the node's store
     * @param batches the partition in it
     * @param id the partition
     * @param leaders opens a client of the partition's group asking its leader
     * @param replica the installing replica
     */
    PartitionInstall(Store store, PartitionStore batches, ClusterNode.PartitionId id,
                     LeaderSnapshots.LeaderClients leaders, Replica replica) {
        this.store = store;
        this.batches = batches;
        this.id = id;
        this.leaders = leaders;
        this.replica = replica;
    }

    /**
     * Read-only queries, answered by the leader for a replica installing its snapshot ({@link PartitionInstall}):
     * {@code snapshot} gives the latest snapshot's term, index, offset and log start ({@code none} without one);
     * {@code first}
     * gives the first offset the store holds; {@code read <from> <until>} gives the stored batches from offset
     * {@code from} on, below {@code until}, at most about {@link PartitionStore#COPY_CHUNK_BYTES}, one after the
     * other.
     *
     * @param latest the leader's latest snapshot, or null
     */
    CompletableFuture<Message> answer(Message request, PartitionSnapshot latest) {
        String[] words = request.getContent().toStringUtf8().split(" ");
        try {
            if (words.length == 1 && words[0].equals("snapshot")) {
                PartitionSnapshot mark = latest;
                return CompletableFuture.completedFuture(Message.valueOf(mark == null ? "none"
                        : mark.at().getTerm() + " " + mark.at().getIndex() + " " + mark.end() + " "
                                + mark.logStart()));
            }
            if (words.length == 1 && words[0].equals("first")) {
                return CompletableFuture.completedFuture(Message.valueOf(Long.toString(
                        store.minOffset(id.topic(), id.partition()))));
            }
            if (words.length == 3 && words[0].equals("read")) {
                return CompletableFuture.completedFuture(Message.valueOf(batches.readChunk(
                        Long.parseLong(words[1]), Long.parseLong(words[2]))));
            }
            throw new IllegalArgumentException("unknown query '" + request.getContent().toStringUtf8() + "'");
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * @return the snapshot installed, or null if nothing is missing (this replica's log holds the leader's first
     *     entry, or the leader has no snapshot and its whole log): Ratis then sends the log
     */
    TermIndex from(RaftPeerId leader, TermIndex firstInLog) throws IOException {
        if (firstInLog.getIndex() == 0 || firstInLog.equals(replica.log().getTermIndex(firstInLog.getIndex()))) {
            // Ratis asks every member being added to install a snapshot first, whatever its log holds: the leader
            // holds its whole log, or this replica's log holds the leader's first entry, so the leader's log gives
            // it the rest (its own data are kept). A log that reaches that index with another entry there (the tail
            // of a leader of an earlier term) is not enough: the leader has no entry before its first to find where
            // the two agree, so it installs.
            LOG.info("{}: the leader's log from its first entry {} follows this replica's: nothing to install", id,
                    firstInLog);
            return null;
        }
        try (RaftClient client = leaders.open(replica.groupId(), leader)) {
            String[] answer = LeaderSnapshots.ask(client, leader, "snapshot").toStringUtf8().split(" ");
            if (answer.length != 3 && answer.length != 4) {
                throw new IOException("the leader of " + id + " has no snapshot yet");
            }
            TermIndex at = TermIndex.valueOf(Long.parseLong(answer[0]), Long.parseLong(answer[1]));
            long end = Long.parseLong(answer[2]);
            // A leader of an earlier version answers no log start: its partitions' records were never deleted.
            long logStart = answer.length == 4 ? Long.parseLong(answer[3]) : 0;
            long leaderStart = Math.min(leaderFirstOffset(client, leader), end);
            if (at.getIndex() + 1 < firstInLog.getIndex()) {
                throw new IOException("the leader's snapshot at " + at + " does not reach its log's first entry "
                        + firstInLog);
            }
            long from = copyFrom(leader, end, leaderStart);
            long copied = 0;
            while (from < end) {
                ByteString chunk = LeaderSnapshots.ask(client, leader, "read " + from + " " + end);
                // No batch up to the snapshot's end, the leader's store starting at or below the copy's offset (it
                // refuses a read below its start): its compaction dropped them, and the copy holds the same gap.
                from = chunk.isEmpty() ? batches.appendGap(from, end, 0) : batches.appendCopied(chunk, from);
                replica.copied(from);
                copied += chunk.size();
            }
            store.sync();
            replica.installed(at, end, logStart);
            LOG.info("{}: installed the snapshot at {} from node {}: batches up to offset {} ({} bytes copied), log"
                    + " start {}", id, at, ClusterNode.nodeId(leader), end, copied, logStart);
            return at;
        }
    }

    /**
     * Makes the store ready for the copy: what it holds past what it knows committed (or copied before) may differ
     * from the leader's and is cut; where the leader's retention removed the batches from there (or this replica's
     * own retention removed what it holds below), the queue starts again empty where the copy can start, as a Kafka
     * follower starts at its leader's log start offset.
     *
     * @return the offset the copy starts at
     */
    private long copyFrom(RaftPeerId leader, long end, long leaderStart) {
        String topic = id.topic();
        int partition = id.partition();
        long from = Math.min(store.nextOffset(topic, partition), Math.max(replica.highWatermark(),
                Math.min(replica.copiedEnd(), end)));
        if (from < leaderStart || from < store.minOffset(topic, partition)) {
            long start = Math.max(from, leaderStart);
            LOG.info("{}: the copy from leader {} starts at offset {} (its first stored; this replica held offsets {} to"
                    + " {}): the queue is emptied and starts there", id, ClusterNode.nodeId(leader), start,
                    store.minOffset(topic, partition), store.nextOffset(topic, partition) - 1);
            store.emptyQueueAt(topic, partition, start);
            return start;
        }
        if (store.nextOffset(topic, partition) > from) {
            store.truncateQueue(topic, partition, from);
        }
        return from;
    }

    /** @return the leader's first stored offset; 0 from a leader of an earlier version, which does not say */
    private static long leaderFirstOffset(RaftClient client, RaftPeerId leader) throws IOException {
        try {
            return Long.parseLong(LeaderSnapshots.ask(client, leader, "first").toStringUtf8());
        } catch (IOException e) {
            if (String.valueOf(e.getMessage()).contains("unknown query")) {
                return 0;
            }
            throw e;
        }
    }
}
