package io.sluice.cluster;

import io.sluice.broker.Replication;
import io.sluice.cluster.ratis.StuckHandOver;
import io.sluice.store.KafkaBatch;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.LeaderSteppingDownException;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;

/**
 * A node's replica of one partition: batches are appended through it on the leader, and it tells who leads and how
 * far the partition is committed.
 */
public final class ReplicatedPartition implements HandOverWatch.Replica {

    /**
     * An append's two moments.
     *
     * @param stored completes with the batch's base offset once the leader stored it (acks=1)
     * @param committed completes with it once a majority has it (acks=all); fails with
     *     {@link Replication.NotLeaderException} or the reason the batch was refused
     */
    public record Appended(CompletableFuture<Long> stored, CompletableFuture<Long> committed) {
    }

    /** The most bytes of batches one entry carries (a larger batch goes alone). */
    static final int ENTRY_BYTES = 1 << 20;
    /** The most bytes of batches waiting for an entry, as Ratis bounds the requests it has pending (64 MiB). */
    static final long WAITING_BYTES = 64L << 20;

    /** Where answers are handed on and the next entry submitted: off Ratis's threads. */
    private static final Executor ANSWERS = Executors.newThreadPerTaskExecutor(Thread.ofVirtual()
            .name("partition-answers").factory());

    /** Ends the waits for answered producers' next batches that these do not end by coming. */
    private static final ScheduledExecutorService REFILL_TIMER = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("partition-refill").factory());

    private final ClusterNode.PartitionId id;
    private final RaftServer.Division division;
    private final ClientId clientId;
    private final AtomicLong callIds;
    /**
     * The most entries of this partition submitted through this replica and not yet answered: batches appended
     * meanwhile wait, and go out together in the next entry, so that the Raft work per entry is shared by them.
     */
    private final int entriesInFlight;
    /** Guards {@link #waiting} and {@link #inFlight}, and keeps submissions in the order batches were appended. */
    private final Object submitLock = new Object();
    private final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
    private long waitingBytes;
    private int inFlight;
    /**
     * The longest the next entry waits, once an entry was answered, for as many new batches as it carried: the
     * producers it answered had their requests in flight taken (a Kafka producer keeps up to five), and send their
     * next batches at once if they have more. Without the wait, the batches that waited during the round trip went
     * out alone, and a producer's batches alternated between two entries in flight and waiting; with it an entry
     * carries about all of them, and the CPU per record falls (the figures: docs/benchmarks.md).
     * A producer that has nothing more to send costs its partition no wait: a batch that comes when none are
     * expected goes out at once.
     */
    private final long refillNanos;
    /** Batches the next entry waits for (see {@link #refillNanos}); zero once they came or the wait ended. */
    private int expected;
    /** Counts the waits for answered producers, so that a wait's timer ends only its own wait. */
    private long refills;
    /** This replica's refusals of appends as a leader stepping down: {@link StuckHandOver}. */
    private final StuckHandOver stuckHandOver = new StuckHandOver(Duration.ofMillis(Leadership.HAND_OVER_MILLIS));

    /** A batch appended and not submitted yet. */
    private record Waiting(KafkaBatch batch, CompletableFuture<Long> stored, CompletableFuture<Long> committed) {
    }

    ReplicatedPartition(ClusterNode.PartitionId id, RaftServer.Division division, ClientId clientId,
                        AtomicLong callIds, int entriesInFlight, Duration refillWait) {
        this.id = id;
        this.entriesInFlight = entriesInFlight;
        this.refillNanos = refillWait.toNanos();
        this.division = division;
        this.clientId = clientId;
        this.callIds = callIds;
    }

    /**
     * Appends a Kafka record batch (v2) to the partition, if this replica leads it. Batches of one partition go into
     * the log in the order they were appended, so their offsets follow that order; those appended while the
     * most entries allowed in flight are unanswered share the next entry. The batch's partitionLeaderEpoch is set
     * to the term it is submitted in, in {@code batch} itself, which is read when it is submitted: the caller hands the
     * batch over (its own copy) and leaves it alone. It was checked ({@link KafkaBatch#check}) and is not again,
     * here or as this replica stores it.
     *
     * <p>A batch waiting is stored on the leader only once it is submitted, so acks=1 waits for it as acks=all does
     * for its turn; at most {@link #WAITING_BYTES} of batches wait, more are refused (the producer sends again).
     */
    public Appended append(KafkaBatch batch) {
        Waiting appended = new Waiting(batch, new CompletableFuture<>(), new CompletableFuture<>());
        synchronized (submitLock) {
            if (waitingBytes + batch.size() > WAITING_BYTES && !waiting.isEmpty()) {
                CompletableFuture<Long> refused = CompletableFuture.failedFuture(new IllegalStateException(
                        id + " has " + waitingBytes + " bytes of batches waiting for replication; send again later"));
                return new Appended(refused, refused);
            }
            waiting.add(appended);
            waitingBytes += batch.size();
            if (expected > 0) {
                expected--;
            }
        }
        submitWaiting();
        return new Appended(appended.stored(), appended.committed());
    }

    /** Submits the waiting batches, as few entries as the limits allow, while fewer entries are in flight. */
    private void submitWaiting() {
        while (true) {
            List<Waiting> entry = new ArrayList<>();
            CompletableFuture<Long> stored;
            CompletableFuture<RaftClientReply> submitted;
            synchronized (submitLock) {
                // Batches expected from answered producers are waited for, unless those waiting fill an entry.
                if (inFlight >= entriesInFlight || waiting.isEmpty()
                        || (expected > 0 && waitingBytes < ENTRY_BYTES)) {
                    return;
                }
                int bytes = 0;
                while (!waiting.isEmpty() && (entry.isEmpty() || bytes + waiting.peek().batch().size() <= ENTRY_BYTES)) {
                    Waiting next = waiting.poll();
                    bytes += next.batch().size();
                    waitingBytes -= next.batch().size();
                    entry.add(next);
                }
                inFlight++;
                long callId = callIds.incrementAndGet();
                stored = machine().submitting(callId, clientId, entry.stream().map(Waiting::batch).toList());
                try {
                    submitted = submit(callId, entry, bytes);
                } catch (RuntimeException | Error e) {
                    submitted = CompletableFuture.failedFuture(e);
                }
            }
            stored.whenComplete((base, failure) -> {
                long offset = base == null ? -1 : base;
                for (Waiting batch : entry) {
                    if (failure != null) {
                        batch.stored().completeExceptionally(failure);
                    } else {
                        batch.stored().complete(offset);
                        offset += batch.batch().offsetCount();
                    }
                }
            });
            CompletableFuture<RaftClientReply> reply = submitted;
            if (reply.isDone()) {
                answered(entry, stored, reply, false);
            } else {
                // Not on the thread that answers (Ratis's): the next entry is submitted from here.
                reply.whenCompleteAsync((answer, failure) -> answered(entry, stored, reply, true), ANSWERS);
            }
        }
    }

    /** Under the submit lock: the batches as one entry, each with the current term as its leader epoch. */
    private CompletableFuture<RaftClientReply> submit(long callId, List<Waiting> entry, int bytes) {
        int epoch = (int) Math.min(Integer.MAX_VALUE, term());
        ByteString data;
        if (entry.size() == 1) {
            entry.getFirst().batch().setPartitionLeaderEpoch(epoch);
            data = UnsafeByteOperations.unsafeWrap(entry.getFirst().batch().buffer());
        } else {
            byte[] all = new byte[bytes];
            int at = 0;
            for (Waiting batch : entry) {
                batch.batch().setPartitionLeaderEpoch(epoch);
                MemorySegment.copy(batch.batch().bytes(), 0, MemorySegment.ofArray(all), at, batch.batch().size());
                at += batch.batch().size();
            }
            data = UnsafeByteOperations.unsafeWrap(all);
        }
        RaftClientRequest request = RaftClientRequest.newBuilder().setClientId(clientId)
                .setServerId(division.getId()).setGroupId(division.getGroup().getGroupId())
                .setCallId(callId).setMessage(Message.valueOf(data))
                .setType(RaftClientRequest.writeRequestType()).build();
        try {
            return division.getRaftServer().submitClientRequestAsync(request);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Moves the partition's log start to {@code offset} (Kafka's DeleteRecords), if this replica leads it: an entry
     * naming no batch, which every replica applies at the same place of the log ({@link EntryHeader#logStart}). It is
     * submitted under the submit lock, so that it is given the end of the batches submitted before it, which the
     * state machine checks as Ratis appends it; batches waiting for an entry go after it.
     *
     * @param offset the new log start, at most the high watermark
     * @return completes with the log start after the entry once it is committed and applied here; fails with
     *     {@link Replication.NotLeaderException} if this replica does not lead, or the reason it was refused
     */
    CompletableFuture<Long> deleteRecords(long offset) {
        CompletableFuture<RaftClientReply> submitted;
        synchronized (submitLock) {
            RaftClientRequest request = RaftClientRequest.newBuilder().setClientId(clientId)
                    .setServerId(division.getId()).setGroupId(division.getGroup().getGroupId())
                    .setCallId(callIds.incrementAndGet()).setMessage(Message.valueOf(EntryHeader.logStartRequest(offset)))
                    .setType(RaftClientRequest.writeRequestType()).build();
            try {
                submitted = division.getRaftServer().submitClientRequestAsync(request);
            } catch (IOException e) {
                submitted = CompletableFuture.failedFuture(e);
            }
        }
        return submitted.thenApply(this::offsetOf);
    }

    /** An entry was answered: each of its batches learns its offset (or why it failed), and waiting ones go out. */
    private void answered(List<Waiting> entry, CompletableFuture<Long> stored, CompletableFuture<RaftClientReply> reply,
                          boolean thenSubmit) {
        boolean refilling = false;
        long refill = 0;
        synchronized (submitLock) {
            inFlight--;
            // An answer that failed (a leader stepping down, say) answers nobody who would send again at once.
            if (refillNanos > 0 && !reply.isCompletedExceptionally() && reply.join().isSuccess()) {
                expected = entry.size();
                refill = ++refills;
                refilling = true;
            } else {
                expected = 0;
            }
        }
        if (refilling) {
            long wait = refill;
            REFILL_TIMER.schedule(() -> {
                synchronized (submitLock) {
                    if (refills != wait || expected == 0) {
                        return;
                    }
                    expected = 0;
                }
                ANSWERS.execute(this::submitWaiting);
            }, refillNanos, TimeUnit.NANOSECONDS);
        }
        long base;
        try {
            base = offsetOf(reply.join());
        } catch (RuntimeException e) {
            Throwable failure = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            // Refused before it was stored (not the leader, a bad batch): the store's futures fail as the commit did.
            stored.completeExceptionally(failure);
            for (Waiting batch : entry) {
                batch.stored().completeExceptionally(failure);
                batch.committed().completeExceptionally(failure);
            }
            base = -1;
        }
        if (base >= 0) {
            long offset = base;
            for (Waiting batch : entry) {
                batch.committed().complete(offset);
                offset += batch.batch().offsetCount();
            }
        }
        if (thenSubmit) {
            submitWaiting();
        }
    }

    /** @return the offset a successful reply names (a batch entry's base offset, a log start entry's log start) */
    private long offsetOf(RaftClientReply reply) {
        if (reply.isSuccess()) {
            stuckHandOver.ended();
            return Long.parseLong(reply.getMessage().getContent().toStringUtf8());
        }
        if (reply.getException() instanceof LeaderSteppingDownException) {
            stuckHandOver.refused(System.nanoTime());
        }
        if (reply.getNotLeaderException() != null || reply.getException() instanceof LeaderNotReadyException
                || reply.getException() instanceof LeaderSteppingDownException) {
            throw new Replication.NotLeaderException(id + " is not led by node " + ClusterNode.nodeId(division.getId())
                    + " now (" + reply.getException() + ")");
        }
        throw new CompletionException(reply.getException());
    }

    /** @return the watch over this replica's refusals of appends as a leader stepping down */
    @Override
    public StuckHandOver stuckHandOver() {
        return stuckHandOver;
    }

    /**
     * Asks this replica, leading, to append an empty entry: Ratis refuses it at once if the leader refuses appends as
     * stepping down (or is no leader, or not ready), and otherwise this partition's state machine refuses it (it holds
     * no record batch), so nothing is appended either way (Ratis counts a failed write, and keeps the failed call in
     * its retry cache until it expires).
     *
     * @return whether the replica refused as a leader stepping down
     */
    @Override
    public boolean refusesAsSteppingDown() throws IOException, InterruptedException {
        RaftClientRequest probe = RaftClientRequest.newBuilder().setClientId(PROBES)
                .setServerId(division.getId()).setGroupId(division.getGroup().getGroupId())
                .setCallId(PROBE_CALLS.incrementAndGet()).setMessage(Message.EMPTY)
                .setType(RaftClientRequest.writeRequestType()).build();
        try {
            return division.getRaftServer().submitClientRequestAsync(probe).get(5, TimeUnit.SECONDS).getException()
                    instanceof LeaderSteppingDownException;
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return false;
        }
    }

    /** The client id and call ids of {@link #refusesAsSteppingDown}. */
    private static final ClientId PROBES = ClientId.randomId();
    private static final AtomicLong PROBE_CALLS = new AtomicLong();

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
    @Override
    public boolean isLeaderReady() {
        return division.getInfo().isLeaderReady();
    }

    /** @return the node this replica knows as the partition's leader */
    public OptionalInt leader() {
        RaftPeerId leader = division.getInfo().getLeaderId();
        return leader == null ? OptionalInt.empty() : OptionalInt.of(ClusterNode.nodeId(leader));
    }

    /**
     * The leader knows how far each follower's log matches its own: those that have every committed entry are in
     * sync, with itself. (Another replica does not know: its caller reports every replica.)
     *
     * @return the replicas in sync, as this replica, which leads, knows them
     */
    public List<Integer> inSync() {
        var info = division.getInfo();
        List<Integer> inSync = new ArrayList<>(List.of(ClusterNode.nodeId(division.getId())));
        long committed = division.getRaftLog().getLastCommittedIndex();
        RoleInfoProto role = roleInfo(division);
        if (role == null) {
            return inSync;
        }
        var followers = role.getLeaderInfo().getFollowerInfoList();
        long[] matched = info.getFollowerMatchIndices();
        if (matched == null) {
            return inSync; // no longer the leader (Ratis gives no match indices then): it stepped down meanwhile
        }
        for (int i = 0; i < followers.size() && i < matched.length; i++) {
            if (matched[i] >= committed) {
                inSync.add(ClusterNode.nodeId(RaftPeerId.valueOf(followers.get(i).getId().getId())));
            }
        }
        return inSync;
    }

    /**
     * @return the division's role as Ratis describes it, or null while it has none yet: Ratis 3.3.0 describes a
     *     division that is still starting with a NullPointerException (RoleInfo.buildRoleInfoProto), which a
     *     Metadata request for a topic just created met, and answered UNKNOWN_SERVER_ERROR for the whole request
     */
    static RoleInfoProto roleInfo(RaftServer.Division division) {
        try {
            return division.getInfo().getRoleInfoProto();
        } catch (NullPointerException starting) {
            return null;
        }
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
