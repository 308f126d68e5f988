package io.sluice.cluster;

import io.sluice.cluster.ratis.RaftLogTail;
import io.sluice.store.Store;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replicas on this node that lost batches their Raft logs name, and the path that cuts such a log back when too
 * many of a partition's replicas are short for the others to elect a leader (docs/cluster.md, "Where the log ends":
 * "Too many short replicas to elect a leader").
 *
 * <p>A replica stopped after losing batches reads how far its store holds its log ({@link #readHeld}), and counts as
 * short to the other replicas' nodes, which ask ({@code short <topic> <partition>}, a stale read of the metadata
 * group answered from {@link #answer}), until it follows a leader again. Once the replicas that are not short are
 * fewer than a majority, each short one cuts its log back to the last entry its store holds whole, and its store to
 * that entry's end ({@link #cutBackIfTooMany}). Thread-safe.
 */
final class ShortReplicas {

    private static final Logger LOG = LoggerFactory.getLogger(ShortReplicas.class);

    private final RaftGroups groups;
    private final Store store;
    private final Supplier<RaftClient> asker;
    /**
     * Partitions whose replica here lost batches its Raft log names and is out of its group: how far its store holds
     * the log (the last entry held whole). Kept until the replica is back in a group that has a leader.
     */
    private final Map<ClusterNode.PartitionId, RaftLogTail.Held> shortHere = new ConcurrentHashMap<>();
    /** The short replicas each partition's replica here last reported waiting for, so each change is logged once. */
    private final Map<ClusterNode.PartitionId, List<Integer>> reportedShort = new ConcurrentHashMap<>();

    /**
     * @param groups the node's groups
     * @param store the node's store
     * @param asker the client this node asks other nodes with (no retries)
     */
    ShortReplicas(RaftGroups groups, Store store, Supplier<RaftClient> asker) {
        this.groups = groups;
        this.store = store;
        this.asker = asker;
    }

    /**
     * Reads how far the stopped replica's store holds its Raft log (its group stopped, its files at rest), and, if
     * the log can be cut back to it, reports the replica short from now on.
     *
     * @param machine the replica's stopped state machine (its latest snapshot), or null if not known
     */
    void readHeld(ClusterNode.PartitionId partition, RaftGroupId id, PartitionStateMachine machine)
            throws IOException {
        if (machine == null) {
            return;
        }
        PartitionSnapshot snapshot = machine.latestSnapshot();
        RaftLogTail.Held held = RaftLogTail.held(groups.logDirectory(id), groups.maxEntryBytes(),
                store.nextOffset(partition.topic(), partition.partition()), snapshot == null ? -1 : snapshot.index(),
                snapshot == null ? 0 : snapshot.end(), data -> EntryHeader.decode(data).end());
        // Not when the store lacks even the snapshot's batches, or starts past the entry it would be cut back to (a
        // copy from a leader cut short), or holds all the log names (a rebuild cut short by a stop): a copy from a
        // leader only.
        if (held != null && held.isShort()
                && store.minOffset(partition.topic(), partition.partition()) <= held.wholeEnd()) {
            shortHere.put(partition, held);
        }
    }

    /** @return the answer to another node asking whether this node's replica of a partition is short */
    String answer(ClusterNode.PartitionId partition) {
        RaftLogTail.Held held = shortHere.get(partition);
        return held == null ? "whole" : "short " + held.wholeIndex();
    }

    /** A partition's replica here is back in a group that has a leader: it no longer holds others back. */
    void followingAgain(ClusterNode.PartitionId partition) {
        if (shortHere.isEmpty() || !shortHere.containsKey(partition)) {
            return;
        }
        RaftServer.Division here = groups.divisionOrNull(groups.groupId(partition));
        if (here != null && here.getInfo().isAlive() && here.getInfo().getLeaderId() != null
                && shortHere.remove(partition) != null) {
            LOG.info("node {}: the replica of {} follows leader {} again", groups.selfId(), partition,
                    here.getInfo().getLeaderId());
        }
    }

    /** The replica rejoined its group through a leader: it is short no more. */
    void rejoined(ClusterNode.PartitionId partition) {
        shortHere.remove(partition);
    }

    /**
     * With no leader among the other replicas: if so many of the partition's replicas lost batches their logs name
     * that those left cannot elect a leader (a power cut of a majority of them under ASYNC), no replica can be rebuilt
     * from a leader. This one then cuts its Raft log back to the last entry its store holds whole, and its store to
     * that entry's end, and says in the log what it gave up; it then starts in its configuration and votes, so the
     * replica with the longest log is elected and the others follow it.
     *
     * @return whether the log was cut back (the marker then names a restart with its log)
     */
    boolean cutBackIfTooMany(ClusterNode.PartitionId partition, RaftGroupId id, List<Integer> replicas)
            throws IOException {
        RaftLogTail.Held held = shortHere.get(partition);
        if (held == null) {
            return false;
        }
        int self = groups.selfId();
        List<Integer> shortOnes = new ArrayList<>(List.of(self));
        for (int other : replicas) {
            if (other != self && askShort(other, partition)) {
                shortOnes.add(other);
            }
        }
        // Those not short are fewer than a majority: no leader can be elected without a short one's vote.
        if (shortOnes.size() < replicas.size() - replicas.size() / 2) {
            if (!shortOnes.equals(reportedShort.put(partition, shortOnes))) {
                LOG.warn("node {}: the replica of {} lost batches its Raft log names and waits to be rebuilt from a"
                        + " leader among the others; replicas known to have lost batches: {} of {}", self,
                        partition, shortOnes, replicas);
            }
            return false;
        }
        // The marker first: a stop before the cut leaves a log its store is short of, which the group's start finds
        // again; one after it, a log the store holds, which restarts as any stopped replica does.
        RestartMarker.write(RestartMarker.of(groups.raftDirectory(), id), partition, false);
        long cut = RaftLogTail.cutAfter(groups.logDirectory(id), held.wholeIndex(), groups.maxEntryBytes());
        long stored = store.nextOffset(partition.topic(), partition.partition());
        if (stored > held.wholeEnd()) {
            store.truncateQueue(partition.topic(), partition.partition(), held.wholeEnd());
        }
        reportedShort.remove(partition);
        LOG.error("node {}: replicas {} of {}'s replicas {} lost batches their Raft logs name (a power cut under ASYNC),"
                + " too many for the others to elect a leader: this replica's Raft log is cut back to entry {}, the"
                + " last whose batches its store holds ({} entries cut, {} to {}), and its store to offset {}. Offsets"
                + " {} to {} of {}, acknowledged or not, are given up here: they are lost unless the replica elected"
                + " now holds them", self, shortOnes, partition, replicas, held.wholeIndex(), cut,
                held.wholeIndex() + 1, held.lastIndex(), held.wholeEnd(), held.wholeEnd(), held.namedEnd() - 1,
                partition);
        return true;
    }

    /** @return whether node {@code other} answers that its replica of the partition is short (no answer: no) */
    private boolean askShort(int other, ClusterNode.PartitionId partition) {
        RaftClient client = asker.get();
        if (client == null) {
            return false;
        }
        try {
            RaftClientReply reply = client.io().sendStaleRead(Message.valueOf("short " + partition.topic() + " "
                    + partition.partition()), 0, ClusterNode.peerId(other));
            return reply.isSuccess() && reply.getMessage().getContent().toStringUtf8().startsWith("short ");
        } catch (IOException | RuntimeException e) {
            LOG.debug("node {}: node {} did not say whether its replica of {} is short: {}", groups.selfId(), other,
                    partition, e.toString());
            return false;
        }
    }
}
