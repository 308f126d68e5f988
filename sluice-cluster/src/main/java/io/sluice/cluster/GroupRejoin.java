package io.sluice.cluster;

import io.sluice.cluster.Tasks.Next;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.CommitInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node rejoining one group, as Raft's membership changes allow: the group's leader takes it out of the
 * configuration (it is not asked for, nor counted in, votes and commits from then on), the group starts here with no
 * configuration of its own (no election timer: it waits to be contacted), or from its directory when its log is kept,
 * and the leader adds it back, which Ratis does once it caught up with the log (or installed a snapshot). Out of the
 * configuration, no append reaches the group while it starts (Ratis 3.3.0 fails a start that one races).
 *
 * <p>A node rejoins so when it lost its data (it may have voted and acknowledged entries before: {@link Membership}),
 * and when its replica's log failed and it comes back ({@link ReplicaRestarts}). A group this node leads (a rejoin
 * resumed after the whole cluster restarted) is left as it is: it won an election, so its log holds every committed
 * entry.
 *
 * <p>The rejoin goes in steps ({@link #step}), each tried again {@link #RETRY_MILLIS} after a failure, which the task
 * that runs it times. Each request goes through a new Raft client of the other replicas: a client told by a replica
 * that this node leads (as it did until its group stopped here) asks this node from then on, which answers that it
 * has no such group, and Ratis's client does not look elsewhere after that answer. Not thread-safe: one task steps it.
 */
final class GroupRejoin implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(GroupRejoin.class);

    /** The wait before a step that failed is tried again. */
    static final long RETRY_MILLIS = 300;
    /** How often a step that keeps failing is reported. */
    private static final long REPORT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private enum Step { START, LEAVE, COMMITTED, JOIN, DONE }

    /** One attempt of a step: a request to the group's other replicas. */
    private interface Attempt {
        RaftClientReply run() throws IOException;
    }

    private final RaftGroups groups;
    private final RaftGroup group;
    private final RaftGroupId id;
    private final String what;
    private final LongConsumer afterRemoval;
    private final boolean keepLog;
    private final LongSupplier nanoClock;
    private final List<RaftPeer> others;
    private final RaftGroup othersGroup;
    private Step step = Step.START;
    private long nextReport;
    private RaftClientReply removed;
    private long committed = -1;
    /** Asks the replica that took this node out for its commit index, until it answers. */
    private RaftClient committedClient;

    /**
     * @param groups the node's groups
     * @param group the group, with every member, this node among them
     * @param what the group, for the log
     * @param afterRemoval told the group's commit index once this node is out of its configuration
     * @param keepLog start the group from its directory (a replica stopped here whose data are intact) rather than
     *     empty
     * @param nanoClock the clock failures are reported by
     */
    GroupRejoin(RaftGroups groups, RaftGroup group, String what, LongConsumer afterRemoval, boolean keepLog,
                LongSupplier nanoClock) {
        this.groups = groups;
        this.group = group;
        this.id = group.getGroupId();
        this.what = what;
        this.afterRemoval = afterRemoval;
        this.keepLog = keepLog;
        this.nanoClock = nanoClock;
        this.others = groups.others(group);
        this.othersGroup = RaftGroup.valueOf(id, others);
    }

    /**
     * Takes the rejoin as far as it goes now.
     *
     * @return {@link Next#DONE} once this node is back in the group's configuration, or the wait before the next step
     * @throws IOException if the group cannot be started here
     */
    Next step() throws IOException {
        while (true) {
            switch (step) {
                case START -> {
                    step = begin() ? Step.LEAVE : Step.DONE;
                    nextReport = nanoClock.getAsLong();
                }
                case LEAVE -> {
                    removed = attempt("leaving its configuration", () -> {
                        try (RaftClient attempt = othersClient(othersGroup)) {
                            return attempt.admin().setConfiguration(others);
                        }
                    });
                    if (removed == null) {
                        return Next.inMillis(RETRY_MILLIS);
                    }
                    committed = removed.getCommitInfos().stream().mapToLong(CommitInfoProto::getCommitIndex).max()
                            .orElse(-1);
                    step = Step.COMMITTED;
                }
                case COMMITTED -> {
                    if (!learnCommitted()) {
                        return Next.inMillis(RETRY_MILLIS);
                    }
                    afterRemoval.accept(committed);
                    step = Step.JOIN;
                    nextReport = nanoClock.getAsLong();
                }
                case JOIN -> {
                    if (attempt("joining its configuration again", this::joinAgain) == null) {
                        return Next.inMillis(RETRY_MILLIS);
                    }
                    LOG.info("node {} rejoined the Raft group of {}", groups.selfId(), what);
                    step = Step.DONE;
                }
                case DONE -> {
                    return Next.DONE;
                }
            }
        }
    }

    /** @return whether the rejoin needs the steps (false: it is done already, {@code afterRemoval} told) */
    private boolean begin() throws IOException {
        RaftServer.Division here = groups.divisionOrNull(id);
        if (here != null && here.getInfo().isAlive() && here.getInfo().isLeader()) {
            afterRemoval.accept(here.getRaftLog().getLastCommittedIndex());
            return false;
        }
        if (others.size() >= 2) {
            return true;
        }
        // One other replica: every commit needed both, so it has them all, and this node's empty vote cannot elect a
        // leader that lacks one; but Ratis 3.3.0 counts no vote from an empty log once the candidate has commits
        // (LeaderElection), so the other, which stepped down without this one's answers, is not elected again either,
        // and the group waits (docs/cluster.md, "Where the log ends"). None: the data are gone.
        if (others.isEmpty() && !keepLog) {
            LOG.error("node {} lost the only replica of {}: it starts empty", groups.selfId(), what);
        }
        if (here == null) {
            if (!keepLog) {
                groups.deleteDirectory(id);
            }
            groups.add(group, what, !keepLog);
        }
        afterRemoval.accept(0);
        return false;
    }

    /**
     * Every topic created before the removal must be rejoined: without the commit index the removal's answer gave,
     * the replica that answered is asked until it says.
     *
     * @return whether the commit index is known
     */
    private boolean learnCommitted() {
        if (committed >= 0) {
            return true;
        }
        if (committedClient == null) {
            committedClient = othersClient(othersGroup);
        }
        try {
            committed = committedClient.getGroupManagementApi(removed.getServerId()).info(id).getLogInfoProto()
                    .getCommitted().getIndex();
        } catch (IOException | RuntimeException e) {
            return false;
        }
        closeCommittedClient();
        return committed >= 0;
    }

    /** The group runs here again (from its directory, or empty), and the others add this node back. */
    private RaftClientReply joinAgain() throws IOException {
        if (keepLog && groups.divisionOrNull(id) == null) {
            groups.add(RaftGroup.valueOf(id), what, false);
        }
        if (!keepLog && groups.divisionOrNull(id) == null) {
            // Out of the configuration now: the log of a replica that lost batches goes.
            groups.deleteDirectory(id);
        }
        startEmptyUnlessAlive();
        try (RaftClient attempt = othersClient(othersGroup)) {
            return attempt.admin().setConfiguration(List.copyOf(group.getPeers()));
        }
    }

    /**
     * The group runs here, alive: if Ratis closed it (a member out of the configuration that stood for election is
     * told to shut down), it is removed with its directory and started again, empty, with no configuration.
     */
    private void startEmptyUnlessAlive() throws IOException {
        RaftServer.Division here = groups.divisionOrNull(id);
        if (here != null && here.getInfo().isAlive()) {
            return;
        }
        if (here != null) {
            groups.remove(id, true, what);
        }
        groups.add(RaftGroup.valueOf(id), what, true);
    }

    /** @return the reply once it succeeded, or null if the attempt failed (reported every 10 s) */
    private RaftClientReply attempt(String doing, Attempt attempt) {
        String failure;
        try {
            RaftClientReply reply = attempt.run();
            if (reply.isSuccess()) {
                return reply;
            }
            failure = String.valueOf(reply.getException());
        } catch (IOException | RuntimeException e) {
            failure = e.toString();
        }
        long now = nanoClock.getAsLong();
        if (now - nextReport >= 0) {
            LOG.info("node {} rejoining, {}: {} not done yet (tried again): {}", groups.selfId(), what, doing,
                    failure);
            nextReport = now + REPORT_NANOS;
        }
        return null;
    }

    /** A client of a group's other replicas, which retries a request for up to 5 s. */
    private RaftClient othersClient(RaftGroup others) {
        return groups.newClient().setProperties(new RaftProperties()).setRaftGroup(others)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(10,
                        TimeDuration.valueOf(500, TimeUnit.MILLISECONDS))).build();
    }

    private void closeCommittedClient() {
        RaftClient client = committedClient;
        committedClient = null;
        if (client != null) {
            try {
                client.close();
            } catch (IOException e) {
                LOG.debug("closing a client of {}'s replicas: {}", what, e.toString());
            }
        }
    }

    /** Lets go of the client it may hold (a rejoin given up, or its task ended). */
    @Override
    public void close() {
        closeCommittedClient();
    }
}
