package io.sluice.cluster;

import io.sluice.broker.Replication.PartitionView;
import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.cluster.Tasks.Next;
import io.sluice.store.Store;
import io.sluice.store.StoreStatus;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.util.LifeCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Replicas whose log could not be written here (the store refused a batch, as on a full disk; a Raft log write failed;
 * the store lost batches the log names): Ratis's log takes nothing more, so the group stops on this node, its directory
 * kept, and a task ({@code node-<id>-restart-<partition>}) brings it back (docs/cluster.md, "A replica whose log cannot
 * be written", "Where the log ends"). Once a second the task asks the other replicas who leads, so that this node
 * names the leader to clients meanwhile; once the store takes appends again (after repeated failures, and a back-off
 * of up to a minute), the replica rejoins its group with its own log ({@link GroupRejoin}). A replica that lost
 * batches rejoins empty once another replica leads, or, where too many replicas lost batches for the others to elect
 * a leader, cuts its log back to what its store holds and starts in its configuration ({@link ShortReplicas}). A
 * forced {@link RestartMarker} names the partition meanwhile, so a broker restarted halfway goes on.
 *
 * <p>Thread-safe.
 */
final class ReplicaRestarts {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaRestarts.class);

    /** The wait between a restart's rounds. */
    private static final long ROUND_MILLIS = 1_000;
    /** The wait while the group is still starting with the server, or the metadata does not name its replicas yet. */
    private static final long STARTING_MILLIS = 200;
    /**
     * How long the other replicas may go without a leader before a replica stopped here starts again, its store still
     * refusing appends, to vote ({@link Restart#voteAgain}): they elect one within a second or two when they can.
     */
    static final long LEADERLESS_MILLIS = 3_000;
    /** Stands in {@link #stopped} for the failed state machine of a replica whose restart resumed at start. */
    private static final Object RESUMED = new Object();

    private final RaftGroups groups;
    private final Replicas replicas;
    private final ShortReplicas shorts;
    private final MetadataState metadata;
    private final Store store;
    private final Tasks tasks;
    private final BooleanSupplier closed;
    /**
     * Partition groups stopped on this node because their log could not be written, until they are back in their
     * configuration: the state machine whose log failed.
     */
    private final Map<PartitionId, Object> stopped = new ConcurrentHashMap<>();
    /** Stopped groups whose started-again member failed too before the rejoin finished: they stop once more. */
    private final Set<PartitionId> failedAgain = ConcurrentHashMap.newKeySet();
    /** How many times in a row each partition's replica stopped here (its restarts back off). */
    private final Map<PartitionId, Integer> logFailures = new ConcurrentHashMap<>();
    /** Partitions whose replica here lost batches its Raft log names: it rejoins its group empty, not with its log. */
    private final Set<PartitionId> lostBatches = ConcurrentHashMap.newKeySet();
    /** Partitions whose replica is stopped here, as the other replicas report them: who leads, in which term. */
    private final Map<PartitionId, PartitionView> elsewhere = new ConcurrentHashMap<>();
    /** The groups of stopped replicas whose topic was deleted meanwhile: their restarts end at their next round. */
    private final Set<RaftGroupId> deleted = ConcurrentHashMap.newKeySet();

    /**
     * @param groups the node's groups
     * @param replicas the replicas it hosts
     * @param shorts the replicas that lost batches
     * @param metadata what the node applied of the metadata (each partition's replicas)
     * @param store the node's store
     * @param tasks where the restarts run
     * @param closed whether the node is closing (a failure then is no news)
     */
    ReplicaRestarts(RaftGroups groups, Replicas replicas, ShortReplicas shorts, MetadataState metadata, Store store,
                    Tasks tasks, BooleanSupplier closed) {
        this.groups = groups;
        this.replicas = replicas;
        this.shorts = shorts;
        this.metadata = metadata;
        this.store = store;
        this.tasks = tasks;
        this.closed = closed;
    }

    /** @return how many times the partition's replica stopped here since the node started, its log failing */
    int stops(PartitionId partition) {
        return logFailures.getOrDefault(partition, 0);
    }

    /** @return the partition as the other replicas describe it while its replica is stopped here, or null */
    PartitionView whileStopped(PartitionId partition) {
        return elsewhere.get(partition);
    }

    /**
     * A replica's log could not be written here: the group stops on this node, its directory kept, and starts again
     * once it can. If it led, the other replicas elect a leader and go on without it.
     *
     * @param machine the replica's state machine whose log failed
     * @param cause why ({@link LostBatchesException}: its store lacks batches its log names)
     */
    void logFailed(PartitionId partition, PartitionStateMachine machine, Throwable cause) {
        if (closed.getAsBoolean()) {
            return;
        }
        if (rootCause(cause) instanceof LostBatchesException) {
            lostBatches.add(partition);
        }
        Object prior = stopped.putIfAbsent(partition, machine);
        if (prior != null) {
            if (prior != machine) {
                failedAgain.add(partition);
            }
            return;
        }
        if (lostBatches.contains(partition)) {
            LOG.error("node {}: the replica of {} stops on this broker: {}. The other replicas go on; this one"
                    + " rejoins its group empty and copies the partition from their leader, or, if too many of them"
                    + " lost batches too for a leader to be elected, cuts its log back to its store",
                    groups.selfId(), partition, rootCause(cause).getMessage());
        } else {
            LOG.error("node {}: the replica of {} stops on this broker: its log could not be written ({}). The other"
                    + " replicas go on; this one starts again, and catches up, once the store takes appends",
                    groups.selfId(), partition, rootCause(cause).toString());
        }
        start(partition);
    }

    /**
     * The partition's group {@code id} is gone with its topic: a restart of its replica under way ends, and what this
     * node kept of its failures goes.
     */
    void forget(PartitionId partition, RaftGroupId id) {
        Object machine = stopped.get(partition);
        if (machine != null && (machine == RESUMED || machine instanceof PartitionStateMachine m
                && id.equals(m.getGroupId()))) {
            deleted.add(id);
            stopped.remove(partition, machine);
            failedAgain.remove(partition);
            logFailures.remove(partition);
            lostBatches.remove(partition);
            elsewhere.remove(partition);
        }
    }

    /**
     * At start, a partition whose replica was stopped after its log failed and had not rejoined: the rejoin goes on
     * (the group, started from its directory with the server, may have been left out of its configuration).
     */
    void resumeIfMarked(PartitionId partition) {
        Path marker = RestartMarker.of(groups.raftDirectory(), groups.groupId(partition));
        if (Files.exists(marker) && stopped.putIfAbsent(partition, RESUMED) == null) {
            boolean rebuild = RestartMarker.rebuilds(marker);
            if (rebuild) {
                lostBatches.add(partition);
            }
            LOG.warn("node {}: the replica of {} was stopped after its log failed; it rejoins its group{}",
                    groups.selfId(), partition, rebuild ? " empty" : "");
            start(partition);
        }
    }

    private void start(PartitionId partition) {
        tasks.start("node-" + groups.selfId() + "-restart-" + partition, Duration.ZERO, new Restart(partition));
    }

    private static Throwable rootCause(Throwable failure) {
        Throwable cause = failure;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause;
    }

    /**
     * One replica's restart: stops its group here (its directory kept, the marker written), then, a round a second,
     * learns who leads from the others and, once the store takes appends and the back-off has passed, starts the
     * replica again: through the leader ({@link GroupRejoin}), by cutting its log back, or from its directory in its
     * configuration where no other replica leads.
     */
    private final class Restart implements Tasks.Round {

        private final PartitionId partition;
        private final RaftGroupId id;
        private List<Integer> replicaIds;
        private RaftGroup group;
        private boolean rebuild;
        private long notBefore;
        private boolean removed;
        private String refusal;
        private boolean toldWaiting;
        /** Since when no other replica has said it leads, or -1 while one does. */
        private long leaderlessSince = -1;
        /** Asks the other replicas who leads (no retries). */
        private RaftClient others;
        /** The rejoin through the leader, once started. */
        private GroupRejoin rejoin;

        Restart(PartitionId partition) {
            this.partition = partition;
            this.id = groups.groupId(partition);
        }

        @Override
        public Next run() {
            if (deleted.remove(id)) {
                LOG.info("node {}: the restart of the replica of {} ends: its topic was deleted", groups.selfId(),
                        partition);
                return Next.DONE;
            }
            if (replicaIds == null && !begin()) {
                return Next.inMillis(STARTING_MILLIS);
            }
            try {
                if (rejoin != null) {
                    return stepRejoin();
                }
                if (!removed && !stop()) {
                    return Next.inMillis(STARTING_MILLIS);
                }
                boolean led = learnLeader();
                String why = storeRefusal();
                if (why != null && !why.equals(refusal)) {
                    LOG.warn("node {}: the replica of {} waits for the store to take appends: {}", groups.selfId(),
                            partition, why);
                }
                refusal = why;
                long now = tasks.nanoTime();
                if (led) {
                    leaderlessSince = -1;
                } else if (leaderlessSince < 0) {
                    leaderlessSince = now;
                }
                if (why != null && voteAgain(now)) {
                    groups.add(group, partition.toString(), false);
                    return finish(false);
                }
                if (why == null && now - notBefore >= 0) {
                    if (led) {
                        // Out of the configuration and back, with its own log (or empty, if it lost batches the log
                        // names): no append reaches the group while it starts, and it catches up from where its log
                        // ends.
                        rejoin = new GroupRejoin(groups, group, partition.toString(), index -> { }, !rebuild,
                                tasks::nanoTime);
                        return stepRejoin();
                    } else if (rebuild && !shorts.cutBackIfTooMany(partition, id, replicaIds)) {
                        // Its batches can come from a leader only: it waits for the others to elect one, which needs
                        // a majority of the replicas without this one (docs/cluster.md, "Where the log ends").
                        return Next.inMillis(ROUND_MILLIS);
                    }
                    // No leader among the others (their disks may be full too, or they lost batches too and this
                    // replica's log was cut back to its store): no append can race the start, so the group starts
                    // from its directory in its configuration, as on a restart.
                    groups.add(group, partition.toString(), false);
                    return finish(false);
                }
            } catch (IOException | RuntimeException e) {
                if (!closed.getAsBoolean()) {
                    LOG.error("node {}: restarting the replica of {} failed (tried again): {}", groups.selfId(),
                            partition, e.toString());
                }
                closeRejoin();
            }
            return Next.inMillis(ROUND_MILLIS);
        }

        /**
         * Learns the partition's replicas: as the metadata names them, or, until this node's metadata has replayed
         * its topic or the partitions it gained (a group started from the Raft directory can fail before that), as
         * its group's configuration here does.
         *
         * @return whether they are known (the restart's back-off then starts)
         */
        private boolean begin() {
            MetadataCommands.Topic topic = metadata.topic(partition.topic());
            RaftServer.Division here = groups.divisionOrNull(id);
            if (topic != null && partition.partition() < topic.partitions()) {
                replicaIds = topic.replicas().get(partition.partition());
            } else if (here != null) {
                replicaIds = here.getGroup().getPeers().stream().map(peer -> ClusterNode.nodeId(peer.getId()))
                        .sorted().toList();
            } else {
                if (!toldWaiting) {
                    LOG.info("node {}: the replica of {} waits for the metadata to name its replicas",
                            groups.selfId(), partition);
                    toldWaiting = true;
                }
                return false;
            }
            group = RaftGroup.valueOf(id, groups.peers(replicaIds));
            rebuild = lostBatches.contains(partition);
            int failures = logFailures.merge(partition, 1, Integer::sum);
            notBefore = tasks.nanoTime() + TimeUnit.SECONDS.toNanos(Math.min(60, 1L << Math.min(6, failures - 1)));
            others = groups.newClient().setProperties(new RaftProperties()).setRaftGroup(group)
                    .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build();
            return true;
        }

        /**
         * Stops the group here (its directory kept), the marker written first; a replica that lost batches then reads
         * how far its store holds its log.
         *
         * @return false if the group is still starting with the server (stopping it now fails halfway)
         */
        private boolean stop() throws IOException {
            RaftServer.Division here = groups.divisionOrNull(id);
            if (here != null && (here.getInfo().getLifeCycleState() == LifeCycle.State.NEW
                    || here.getInfo().getLifeCycleState() == LifeCycle.State.STARTING)) {
                return false;
            }
            PartitionStateMachine machine = here != null && here.getStateMachine() instanceof PartitionStateMachine m
                    ? m : stopped.get(partition) instanceof PartitionStateMachine m ? m : null;
            if (here != null) {
                RestartMarker.write(RestartMarker.of(groups.raftDirectory(), id), partition, rebuild);
                groups.remove(id, false, partition.toString());
                replicas.drop(partition);
            }
            removed = true;
            if (rebuild) {
                shorts.readHeld(partition, id, machine);
            }
            return true;
        }

        /**
         * Whether the replica, its store refusing appends, starts again from its directory in its configuration so
         * that it can vote: no other replica has led for {@link #LEADERLESS_MILLIS}, and its back-off has passed. The
         * others may be unable to elect a leader without it: one of them may hold no entry of the log yet (its group
         * started after the leader's first entries were committed without it, its broker behind on the metadata or
         * down), and Ratis 3.3.0 counts no vote from a replica whose log is empty once the candidate has committed
         * entries, so the one that holds the log and the empty one elect no one (docs/history.md, "A full leader's
         * replica stopped, and no other was elected"). This replica could not stay in its group until they could: a
         * leader's log that fails to append is closed by Ratis at once, and neither sends entries nor votes. Started
         * again, it votes as on a restart; no append can race the start, no other replica leading. Its log fails
         * again at the first batch a leader sends it, and it stops again, the back-off longer.
         */
        private boolean voteAgain(long now) {
            if (rebuild || leaderlessSince < 0 || now - notBefore < 0
                    || now - leaderlessSince < TimeUnit.MILLISECONDS.toNanos(LEADERLESS_MILLIS)) {
                return false;
            }
            LOG.warn("node {}: no other replica of {} has led for {} ms; this one starts again, its store still refusing"
                    + " appends, so that it can vote (a replica that holds none of the log elects no leader with"
                    + " the others), and stops again at the first batch it is sent", groups.selfId(), partition,
                    TimeUnit.NANOSECONDS.toMillis(now - leaderlessSince));
            return true;
        }

        private Next stepRejoin() throws IOException {
            Next next = rejoin.step();
            if (!next.done()) {
                return next;
            }
            closeRejoin();
            shorts.rejoined(partition);
            return finish(true);
        }

        /** The replica runs again: the marker goes, and a replica that failed again meanwhile stops once more. */
        private Next finish(boolean led) throws IOException {
            replicas.drop(partition);
            replicas.partition(partition);
            elsewhere.remove(partition);
            Files.deleteIfExists(RestartMarker.of(groups.raftDirectory(), id));
            LOG.info("node {}: the replica of {} started again after its log failed{}", groups.selfId(), partition,
                    rebuild && led ? ", empty, to copy the batches it lost" : "");
            if (rebuild) {
                // A loss found while this restart kept the log stays marked for the next one.
                lostBatches.remove(partition);
            }
            Object failed = stopped.remove(partition);
            replicas.changed(partition);
            if (!closed.getAsBoolean() && failedAgain.remove(partition)) {
                ReplicatedPartition current = replicas.replicaOf(partition.topic(), partition.partition());
                if (current != null && current.machine() != failed) {
                    logFailed(partition, current.machine(), new IOException("the log failed again while rejoining"));
                }
            }
            return Next.DONE;
        }

        /** Asks the other replicas which of them leads, so that this node can tell clients. */
        private boolean learnLeader() {
            List<Integer> inSync = replicaIds.stream().filter(replica -> replica != groups.selfId()).toList();
            for (int other : inSync) {
                try {
                    var role = others.getGroupManagementApi(ClusterNode.peerId(other)).info(id).getRoleInfoProto();
                    if (role.getRole() == RaftPeerRole.LEADER) {
                        int term = (int) Math.min(Integer.MAX_VALUE, role.getLeaderInfo().getTerm());
                        elsewhere.put(partition, new PartitionView(other, term, replicaIds, inSync));
                        replicas.changed(partition);
                        return true;
                    }
                } catch (IOException | RuntimeException e) {
                    LOG.debug("node {}: node {} did not say who leads {}: {}", groups.selfId(), other, partition,
                            e.toString());
                }
            }
            elsewhere.remove(partition);
            return false;
        }

        private void closeRejoin() {
            GroupRejoin started = rejoin;
            rejoin = null;
            if (started != null) {
                started.close();
            }
        }

        @Override
        public void ended() {
            closeRejoin();
            RaftClient client = others;
            if (client != null) {
                try {
                    client.close();
                } catch (IOException e) {
                    LOG.error("node {}: cannot close the client of {}'s other replicas: {}", groups.selfId(),
                            partition, e.toString());
                }
            }
        }
    }

    /**
     * @return why the replica should not start again now (a log turned read-only, or the disk above the emergency
     *     ratio: appends resume below the hard ratio, and catching up could push it straight back), or null
     */
    private String storeRefusal() {
        double emergency = store.config().retention().diskEmergencyRatio();
        List<StoreStatus> statuses = new ArrayList<>(store.ownLogStatuses().values());
        statuses.add(store.status());
        for (StoreStatus status : statuses) {
            if (status.state() != StoreStatus.State.OPEN) {
                return "a log is " + status.state() + (status.reason() == null ? "" : ": " + status.reason());
            }
            double used = status.lastRetention() == null ? 0 : status.lastRetention().diskUsedRatio();
            if (status.appendsRefused() || used > emergency) {
                return String.format("the disk is %.1f%% full, above the emergency ratio %.1f%%", used * 100,
                        emergency * 100);
            }
        }
        return null;
    }
}
