package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.cluster.Tasks.Next;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's membership of the cluster (docs/cluster.md, "A lost data directory"): at a start with no metadata group
 * in its Raft directory it finds out whether the cluster formed, and with it ({@code node-<id>-join}); it records
 * that it took part ({@code node-<id>-register}); and a node that took part and lost its data rejoins every group it
 * belongs to ({@code node-<id>-rejoin}, then {@code node-<id>-rejoin-<partition>} for each partition the replayed
 * metadata names it a replica of), catching up before it counts as a voter. Each duty is a task on the node's
 * {@link Tasks}, a round per attempt.
 *
 * <p>A {@value #REJOIN_FILE} file in the Raft directory (written and forced) marks a rejoin under way, so a node
 * stopped halfway goes on where it was. Thread-safe.
 */
final class Membership {

    private static final Logger LOG = LoggerFactory.getLogger(Membership.class);

    /** The file in a node's Raft directory that says it is rejoining the cluster. */
    static final String REJOIN_FILE = "sluice-rejoining";
    /** At most this many partition groups rejoin at once (each holds a client and a copy from its leader). */
    static final int REJOIN_SLOTS = 4;
    /** How often a node asks whether the cluster formed, until it can tell. */
    private static final long JOIN_MILLIS = 200;
    /** How often a partition waiting for a rejoin slot looks again. */
    private static final long SLOT_MILLIS = 100;
    /** How long a partition's rejoin waits after a failure before it starts again. */
    private static final long REJOIN_AGAIN_MILLIS = 1_000;

    private final RaftGroups groups;
    private final MetadataClient client;
    private final MetadataStateMachine metadata;
    private final Replicas replicas;
    private final Tasks tasks;
    private final BooleanSupplier closed;
    /** Present while this node rejoins the cluster after losing its Raft data. */
    private final Path rejoinMarker;
    private final boolean resuming;
    /**
     * Topics created in the metadata log below this index may have had this node among their groups' voters before
     * it lost its data: it rejoins those groups rather than add them as a voter; 0 if it lost nothing.
     */
    private volatile long rejoinBelow;
    /** Partition groups this node is rejoining now. */
    private final AtomicInteger rejoining = new AtomicInteger();
    private final Semaphore rejoinSlots = new Semaphore(REJOIN_SLOTS);

    /**
     * Reads whether a rejoin was under way: if so, the metadata the groups replay as they start must not add
     * partition groups as a voter before the rejoin says which topics are older than it.
     *
     * @param groups the node's groups (not started yet)
     * @param client the node's metadata client
     * @param metadata its metadata state machine
     * @param replicas the replicas it hosts
     * @param tasks where the duties run
     * @param closed whether the node is closing (a failure then is no news)
     */
    Membership(RaftGroups groups, MetadataClient client, MetadataStateMachine metadata, Replicas replicas,
               Tasks tasks, BooleanSupplier closed) {
        this.groups = groups;
        this.client = client;
        this.metadata = metadata;
        this.replicas = replicas;
        this.tasks = tasks;
        this.closed = closed;
        this.rejoinMarker = groups.raftDirectory().resolve(REJOIN_FILE);
        this.resuming = Files.exists(rejoinMarker);
        if (resuming) {
            rejoinBelow = Long.MAX_VALUE;
        }
    }

    /**
     * Once the node's server runs: goes on with a rejoin under way; or, with no metadata group in the Raft directory,
     * finds out whether to join or rejoin; or records that this node took part, if the metadata does not say so yet.
     */
    void start() {
        if (resuming) {
            tasks.start(taskName("rejoin"), Duration.ZERO, new RejoinAll());
        } else if (!groups.hosts(groups.metadataGroupId())) {
            tasks.start(taskName("join"), Duration.ZERO, new Join());
        } else {
            startRegister();
        }
    }

    private String taskName(String duty) {
        return "node-" + groups.selfId() + "-" + duty;
    }

    /** @return whether a topic created at this metadata index is older than this node's rejoin (it rejoins it) */
    boolean rejoins(long index) {
        return index < rejoinBelow;
    }

    /**
     * A node with no metadata group in its Raft directory: a new cluster's, or one whose data were lost (a wiped or
     * replaced disk). It asks the other nodes: if none has a metadata log with an entry, the cluster has not formed
     * and this node takes part as a voter from the start (and records that it did). If one has, the cluster formed,
     * and it asks the metadata, through the log, whether it took part ({@link #askToJoin}): if it did, it may have
     * acknowledged entries and voted before it lost them, and it rejoins ({@link RejoinAll}); if not (it started just
     * after the others formed the cluster), the same command records it, and it takes part as a voter, with nothing to
     * have lost. Until it can tell, it waits: a node that cannot tell must not vote.
     */
    private final class Join implements Tasks.Round {

        private long nextReport = tasks.nanoTime();
        private int attempts;

        @Override
        public Next run() {
            try {
                List<Integer> silent = new ArrayList<>();
                boolean formed = clusterFormed(silent);
                String answer = formed ? askToJoin(attempts++) : null;
                if (MetadataCommands.TOOK_PART.equals(answer)) {
                    LOG.warn("node {} has no Raft data and the cluster has formed with it: it rejoins every group it"
                            + " belongs to, catching up before it counts as a voter", groups.selfId());
                    DurableFile.write(rejoinMarker, "rejoining\n");
                    tasks.start(taskName("rejoin"), Duration.ZERO, new RejoinAll());
                    return Next.DONE;
                }
                if (MetadataCommands.RECORDED.equals(answer)) {
                    LOG.info("node {} has no Raft data and never took part in the cluster formed without it: it"
                            + " joins as a voter", groups.selfId());
                    groups.add(groups.metadataGroup(), "the metadata", true);
                    return Next.DONE;
                }
                if (!formed && silent.isEmpty()) {
                    groups.add(groups.metadataGroup(), "the metadata", true);
                    startRegister();
                    return Next.DONE;
                }
                if (tasks.nanoTime() - nextReport >= 0) {
                    LOG.info("node {} has no Raft data; waiting for nodes {} to tell whether the cluster has formed"
                            + " with it", groups.selfId(), silent.isEmpty() ? otherIds() : silent);
                    nextReport = tasks.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                }
                return Next.inMillis(JOIN_MILLIS);
            } catch (IOException | RuntimeException e) {
                if (!closed.getAsBoolean()) {
                    LOG.error("node {} could not join the cluster: {}", groups.selfId(), e.toString());
                }
                return Next.DONE;
            }
        }
    }

    /** @return the ids of the other nodes */
    private List<Integer> otherIds() {
        return groups.cluster().nodes().stream().map(ClusterSpec.Node::id).filter(id -> id != groups.selfId())
                .toList();
    }

    /**
     * @param silent gets the nodes that did not answer
     * @return true if another node's metadata log holds an entry
     */
    private boolean clusterFormed(List<Integer> silent) throws IOException {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(1, TimeUnit.SECONDS));
        try (RaftClient asking = groups.newClient().setProperties(properties)
                .setRaftGroup(groups.metadataGroup()).setClientId(ClientId.randomId())
                .setRetryPolicy(RetryPolicies.noRetry()).build()) {
            for (ClusterSpec.Node node : groups.cluster().nodes()) {
                if (node.id() == groups.selfId()) {
                    continue;
                }
                RaftPeerId peer = ClusterNode.peerId(node.id());
                try {
                    if (asking.getGroupManagementApi(peer).list().getGroupIds().contains(groups.metadataGroupId())) {
                        var log = asking.getGroupManagementApi(peer).info(groups.metadataGroupId()).getLogInfoProto();
                        if (log.hasLastEntry() && log.getLastEntry().getIndex() >= 0) {
                            return true;
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    silent.add(node.id());
                }
            }
        }
        return false;
    }

    /**
     * Submits {@code join <this node>} through the other nodes (a command in the log, not a read a deposed leader
     * could answer), starting at each in turn from one attempt to the next (one may not host the group).
     *
     * @param attempt how many times this node asked before
     * @return {@link MetadataCommands#TOOK_PART}, {@link MetadataCommands#RECORDED}, or null if no leader answered
     */
    private String askToJoin(int attempt) {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(1, TimeUnit.SECONDS));
        List<RaftPeer> others = groups.others(groups.metadataGroup());
        try (RaftClient asking = groups.newClient().setProperties(properties)
                .setRaftGroup(RaftGroup.valueOf(groups.metadataGroupId(), others)).setClientId(ClientId.randomId())
                .setLeaderId(others.get(attempt % others.size()).getId())
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(3,
                        TimeDuration.valueOf(200, TimeUnit.MILLISECONDS))).build()) {
            RaftClientReply reply = asking.io().send(Message.valueOf(MetadataCommands.joinCommand(groups.selfId())));
            String answer = reply.isSuccess() ? reply.getMessage().getContent().toStringUtf8() : null;
            return MetadataCommands.TOOK_PART.equals(answer) || MetadataCommands.RECORDED.equals(answer)
                    ? answer : null;
        } catch (IOException | RuntimeException e) {
            LOG.debug("node {}: no answer to whether it took part: {}", groups.selfId(), e.toString());
            return null;
        }
    }

    /**
     * Records in the metadata that this node took part (its member of the metadata group runs), tried again until done
     * or the node closes; skipped once the metadata this node applied records it. Submitted at every start otherwise
     * (the command is idempotent), so that a node from before the records is recorded too. A node of a new cluster
     * registers just after it starts its member: if its data are lost before the record is committed, it is taken for
     * a new node when it comes back.
     */
    private void startRegister() {
        tasks.start(taskName("register"), Duration.ZERO, () -> {
            if (metadata.state().members().contains(groups.selfId())) {
                return Next.DONE;
            }
            RaftServer.Division here = groups.divisionOrNull(groups.metadataGroupId());
            if (here == null || here.getInfo().getLeaderId() == null) {
                // No leader yet (a cluster starting): a request now only fails, and Ratis logs each failure as an
                // error.
                return Next.inMillis(100);
            }
            try {
                client.send(MetadataCommands.memberCommand(groups.selfId())).get(30, TimeUnit.SECONDS);
                return Next.DONE;
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                LOG.debug("node {}: recording that it took part, tried again: {}", groups.selfId(), e.toString());
                return Next.inMillis(300);
            }
        });
    }

    /**
     * Rejoins the metadata group, then every partition group the replayed metadata names this node a replica of
     * (those go on in tasks of their own, started as the topics are applied), then removes the marker.
     */
    private final class RejoinAll implements Tasks.Round {

        private final GroupRejoin metadataRejoin;
        private boolean metadataRejoined;
        private long removedAt;

        RejoinAll() {
            this.metadataRejoin = new GroupRejoin(groups, groups.metadataGroup(), "the metadata", index -> {
                removedAt = index;
                rejoinBelow = index + 1;
            }, false, tasks::nanoTime);
        }

        @Override
        public Next run() {
            try {
                if (!metadataRejoined) {
                    Next next = metadataRejoin.step();
                    if (!next.done()) {
                        return next;
                    }
                    metadataRejoined = true;
                }
                // Every topic created before this node left the metadata group's configuration is applied once the
                // metadata is applied that far; then no partition rejoin starts any more.
                TermIndex applied = metadata.getLastAppliedTermIndex();
                if (applied == null || applied.getIndex() < removedAt || rejoining.get() > 0) {
                    return Next.inMillis(100);
                }
                Files.deleteIfExists(rejoinMarker);
                LOG.warn("node {} rejoined the cluster: its groups are caught up and it votes again", groups.selfId());
            } catch (IOException | RuntimeException e) {
                if (!closed.getAsBoolean()) {
                    LOG.error("node {} could not rejoin the cluster: {}", groups.selfId(), e.toString());
                }
            }
            return Next.DONE;
        }

        @Override
        public void ended() {
            metadataRejoin.close();
        }
    }

    /**
     * In a task of its own (the metadata's apply thread goes on): rejoin a partition's group, creating its topic in the
     * store first, trying again after any failure until it is done or the node closes; the marker stays until then.
     */
    void rejoinPartition(MetadataCommands.Topic topic, PartitionId partition, List<Integer> replicaIds) {
        replicas.name(partition);
        rejoining.incrementAndGet();
        tasks.start(taskName("rejoin-" + partition), Duration.ZERO, new PartitionRejoin(topic, partition,
                RaftGroup.valueOf(groups.groupId(partition), groups.peers(replicaIds))));
    }

    /** A partition's rejoin: in one of the {@link #REJOIN_SLOTS}, which it holds until its group is rejoined. */
    private final class PartitionRejoin implements Tasks.Round {

        private final MetadataCommands.Topic topic;
        private final PartitionId partition;
        private final RaftGroup group;
        private boolean slot;
        private GroupRejoin rejoin;

        PartitionRejoin(MetadataCommands.Topic topic, PartitionId partition, RaftGroup group) {
            this.topic = topic;
            this.partition = partition;
            this.group = group;
        }

        @Override
        public Next run() {
            MetadataCommands.Topic now = metadata.state().topic(topic.name());
            if (now == null || !now.is(topic.id())) {
                LOG.info("node {}: the rejoin of {} ends: its topic was deleted", groups.selfId(), partition);
                rejoining.decrementAndGet();
                return Next.DONE;
            }
            if (!slot) {
                if (!rejoinSlots.tryAcquire()) {
                    return Next.inMillis(SLOT_MILLIS);
                }
                slot = true;
            }
            try {
                if (rejoin == null) {
                    // With the id the metadata gave it since its creation was applied, if any (KIP-516).
                    replicas.ensureTopic(topic.id() == null && now.id() != null ? topic.withId(now.id()) : topic);
                    rejoin = new GroupRejoin(groups, group, partition.toString(), index -> { }, false,
                            tasks::nanoTime);
                }
                Next next = rejoin.step();
                if (!next.done()) {
                    return next;
                }
                // A replica looked up before the group started again here held the old member.
                replicas.drop(partition);
                replicas.partition(partition);
                replicas.changed(partition);
                rejoining.decrementAndGet();
                ended();
                return Next.DONE;
            } catch (IOException | RuntimeException e) {
                if (!closed.getAsBoolean()) {
                    LOG.error("node {} could not rejoin the group of {} (tried again): {}", groups.selfId(),
                            partition, e.toString());
                }
                ended();
                return Next.inMillis(REJOIN_AGAIN_MILLIS);
            }
        }

        /** Lets go of the slot and the rejoin's client. */
        @Override
        public void ended() {
            if (slot) {
                slot = false;
                rejoinSlots.release();
            }
            GroupRejoin started = rejoin;
            rejoin = null;
            if (started != null) {
                started.close();
            }
        }
    }
}
