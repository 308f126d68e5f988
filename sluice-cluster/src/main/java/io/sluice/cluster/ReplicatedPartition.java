package io.sluice.cluster;

import java.io.IOException;
import java.nio.ByteBuffer;
import io.sluice.broker.Replication;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.LeaderSteppingDownException;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * A node's replica of one partition: batches are appended through it on the leader, and it tells who leads and how
 * far the partition is committed.
 */
public final class ReplicatedPartition {

    /**
     * An append's two moments.
     *
     * @param stored completes with the batch's base offset once the leader stored it (acks=1)
     * @param committed completes with it once a majority has it (acks=all); fails with
     *     {@link Replication.NotLeaderException} or the reason the batch was refused
     */
    public record Appended(CompletableFuture<Long> stored, CompletableFuture<Long> committed) {
    }

    private final ClusterNode.PartitionId id;
    private final RaftServer.Division division;
    private final ClientId clientId;
    private final AtomicLong callIds;
    private final Object submitLock = new Object();
    /** Where a record batch keeps its partitionLeaderEpoch. */
    static final int LEADER_EPOCH_OFFSET = 12;

    ReplicatedPartition(ClusterNode.PartitionId id, RaftServer.Division division, ClientId clientId,
                        AtomicLong callIds) {
        this.id = id;
        this.division = division;
        this.clientId = clientId;
        this.callIds = callIds;
    }

    /**
     * Appends a Kafka record batch (v2) to the partition, if this replica leads it. Batches of one partition are
     * submitted one at a time, so their offsets follow the log's order. The batch's partitionLeaderEpoch is set to
     * the current term, in {@code batch} itself.
     */
    public Appended append(byte[] batch) {
        if (batch.length >= LEADER_EPOCH_OFFSET + 4) {
            // The batch's partitionLeaderEpoch (outside its CRC) says in which term it was appended, as Kafka's do.
            ByteBuffer.wrap(batch).putInt(LEADER_EPOCH_OFFSET, (int) Math.min(Integer.MAX_VALUE, term()));
        }
        long callId = callIds.incrementAndGet();
        RaftClientRequest request = RaftClientRequest.newBuilder().setClientId(clientId)
                .setServerId(division.getId()).setGroupId(division.getGroup().getGroupId())
                .setCallId(callId).setMessage(Message.valueOf(ByteString.copyFrom(batch)))
                .setType(RaftClientRequest.writeRequestType()).build();
        CompletableFuture<Long> stored = machine().stored(callId);
        CompletableFuture<RaftClientReply> reply;
        synchronized (submitLock) {
            try {
                reply = division.getRaftServer().submitClientRequestAsync(request);
            } catch (IOException e) {
                reply = CompletableFuture.failedFuture(e);
            }
        }
        CompletableFuture<Long> committed = reply.thenApply(this::offsetOf);
        // Refused before it was stored (not the leader, a bad batch): the store's future fails as the commit did.
        committed.whenComplete((offset, failure) -> {
            if (failure != null) {
                stored.completeExceptionally(failure);
            }
        });
        return new Appended(stored, committed);
    }

    private long offsetOf(RaftClientReply reply) {
        if (reply.isSuccess()) {
            return Long.parseLong(reply.getMessage().getContent().toStringUtf8());
        }
        if (reply.getNotLeaderException() != null || reply.getException() instanceof LeaderNotReadyException
                || reply.getException() instanceof LeaderSteppingDownException) {
            throw new Replication.NotLeaderException(id + " is not led by node " + ClusterNode.nodeId(division.getId())
                    + " now (" + reply.getException() + ")");
        }
        throw new CompletionException(reply.getException());
    }

    /** @return the replica's Raft group member on this node */
    RaftServer.Division division() {
        return division;
    }

    /** @return this replica's state machine */
    public PartitionStateMachine machine() {
        return (PartitionStateMachine) division.getStateMachine();
    }

    /** @return true if this replica leads the partition now */
    public boolean isLeader() {
        return division.getInfo().isLeader();
    }

    /** @return true if this replica leads the partition and has committed an entry of its term: appends go through */
    public boolean isLeaderReady() {
        return division.getInfo().isLeaderReady();
    }

    /** @return the node this replica knows as the partition's leader */
    public OptionalInt leader() {
        RaftPeerId leader = division.getInfo().getLeaderId();
        return leader == null ? OptionalInt.empty() : OptionalInt.of(ClusterNode.nodeId(leader));
    }

    /** @return the Raft term this replica is in (the partition's leader epoch) */
    public long term() {
        return division.getInfo().getCurrentTerm();
    }

    /** @return the offset below which the partition is committed, as this replica knows */
    public long highWatermark() {
        return machine().highWatermark();
    }

    /** @return the partition */
    public ClusterNode.PartitionId id() {
        return id;
    }
}
