package io.sluice.cluster;

import io.sluice.broker.Replication.CommittedOffset;
import io.sluice.broker.TopicIds;
import io.sluice.broker.Replication.GroupsCoordination;
import io.sluice.broker.Replication.NotLeaderException;
import io.sluice.cluster.MetadataCommands.Topic;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.AlreadyClosedException;
import org.apache.ratis.protocol.exceptions.GroupMismatchException;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's side of the metadata group: the Raft client that submits its commands (topics created and grown,
 * offsets committed, groups forgotten, this node's member record) to the group's leader, wherever it is, and what this
 * node's member of the group says of its leader (the controller, the groups' coordinator). It also holds the client
 * this node asks other nodes' servers with (group info, stale reads), which fails at once rather than retry.
 *
 * <p>Thread-safe.
 */
final class MetadataClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MetadataClient.class);

    private final RaftGroups groups;
    private final MetadataStateMachine metadata;
    private final BooleanSupplier closed;
    private final int maxPartitions;
    /** Replaced when Ratis closes it (it does after some failures, and then refuses every later request). */
    private final AtomicReference<RaftClient> client = new AtomicReference<>();
    /** Asks other nodes' servers, without retries (group info, stale reads). */
    private volatile RaftClient asker;

    /**
     * @param groups the node's groups
     * @param metadata its metadata state machine
     * @param closed whether the node is closing (a failed request is then not tried again)
     * @param maxPartitions the most partitions the store takes per topic
     */
    MetadataClient(RaftGroups groups, MetadataStateMachine metadata, BooleanSupplier closed, int maxPartitions) {
        this.groups = groups;
        this.metadata = metadata;
        this.closed = closed;
        this.maxPartitions = maxPartitions;
    }

    /** Opens the clients, once the node's server runs. */
    void open() {
        client.set(newClient(null));
        RaftProperties asking = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(asking, TimeDuration.valueOf(1, TimeUnit.SECONDS));
        asker = groups.newClient().setProperties(asking).setRaftGroup(groups.metadataGroup())
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build();
    }

    /** @return the client this node asks other nodes' servers with (no retries, 1 s a request); null before open */
    RaftClient asker() {
        return asker;
    }

    /**
     * A client sends first to the leader it is given, else to the one the JVM's Ratis clients last saw lead the group
     * (they keep it while they ask), else to the first node. That one may not host the group any more (it lost its
     * data, or its replica stopped), and Ratis fails a request so answered for good, closing the client: a new client
     * starts at the leader this node's member of the group knows, or at another node than the one that failed.
     *
     * @param failed the node the last client was sending to, or null
     */
    private RaftClient newClient(RaftPeerId failed) {
        RaftPeerId first = null;
        RaftServer.Division here = groups.divisionOrNull(groups.metadataGroupId());
        RaftPeerId known = here == null ? null : here.getInfo().getLeaderId();
        if (known != null && !known.equals(failed)) {
            first = known;
        } else if (failed != null) {
            first = groups.metadataGroup().getPeers().stream().map(RaftPeer::getId).filter(id -> !id.equals(failed))
                    .findFirst().orElse(null);
        }
        return groups.newClient().setProperties(new RaftProperties()).setRaftGroup(groups.metadataGroup())
                .setLeaderId(first).setClientId(ClientId.randomId()).build();
    }

    /**
     * Submits a metadata command; on a client Ratis closed, or a node that does not host the group, once more on a
     * new client ({@link #newClient}).
     */
    CompletableFuture<RaftClientReply> send(String command) {
        RaftClient current = client.get();
        return current.async().send(Message.valueOf(command)).exceptionallyCompose(failure -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            if (!(cause instanceof AlreadyClosedException || cause instanceof GroupMismatchException)
                    || closed.getAsBoolean()) {
                return CompletableFuture.failedFuture(cause);
            }
            RaftClient fresh = newClient(current.getLeaderId());
            if (client.compareAndSet(current, fresh)) {
                closeQuietly(current);
            } else {
                closeQuietly(fresh);
                fresh = client.get();
            }
            return fresh.async().send(Message.valueOf(command));
        });
    }

    /**
     * The metadata's answer to a topic, partitions, offsets or forget command. The command is sent once this node has
     * applied a member record ({@link Membership}; its own or another node's), so a record precedes it in the log: a
     * topic or a commit logged before any member record marks the log as one from before the records, which makes a
     * node of a new cluster that starts late (with no Raft data, as a lost directory) rejoin rather than join as new.
     * (Not its own record: a node that rejoined a cluster from before the records is not recorded until it restarts.)
     *
     * @return the answer's text, once the cluster applied the command; fails if the cluster did not take it
     */
    CompletableFuture<String> answer(String command) {
        return answerAt(command).thenApply(Answer::text);
    }

    /**
     * A command's answer, and the index of the entry that logged it.
     *
     * @param text the answer
     * @param index the log index of the command's entry, which this node applies in its turn
     */
    record Answer(String text, long index) {
    }

    /** As {@link #answer}, with the index of the command's entry. */
    CompletableFuture<Answer> answerAt(String command) {
        // Once a record is applied (all but the first moments of a new cluster), sent at once, in the caller's order;
        // before, async: the record's apply ends the wait, and a send must not hold the metadata's apply thread.
        CompletableFuture<Void> recorded = metadata.state().awaitMembers();
        return (recorded.isDone() ? send(command) : recorded.thenComposeAsync(any -> send(command)))
                .thenCompose(reply -> reply.isSuccess()
                        ? CompletableFuture.completedFuture(new Answer(reply.getMessage().getContent().toStringUtf8(),
                                reply.getLogIndex()))
                        : CompletableFuture.failedFuture(reply.getException()));
    }

    private static void closeQuietly(RaftClient client) {
        try {
            client.close();
        } catch (IOException e) {
            LOG.debug("closing a metadata client: {}", e.toString());
        }
    }

    /** @return this node's member of the metadata group */
    RaftServer.Division division() throws IOException {
        return groups.division(groups.metadataGroupId());
    }

    /** @return the node that leads the metadata group, as this node knows it, or -1 */
    int controller() {
        try {
            RaftPeerId leader = division().getInfo().getLeaderId();
            return leader == null ? -1 : ClusterNode.nodeId(leader);
        } catch (IOException e) {
            return -1;
        }
    }

    /** @return whether this node leads the metadata group and has committed an entry of its term */
    boolean controllerReady() {
        try {
            return division().getInfo().isLeaderReady();
        } catch (IOException e) {
            return false;
        }
    }

    /** @return whether this node leads the metadata group */
    boolean isController() {
        try {
            return division().getInfo().getCurrentRole() == RaftPeerRole.LEADER;
        } catch (IOException e) {
            return false;
        }
    }

    /** @return the term this node coordinates the groups in (-1 if it does not), and what it applied */
    GroupsCoordination groupsCoordination() {
        long epoch = -1;
        try {
            var info = division().getInfo();
            if (info.isLeader()) {
                epoch = info.getCurrentTerm();
            }
        } catch (IOException e) {
            epoch = -1;
        }
        return new GroupsCoordination(epoch, metadata.applied());
    }

    /**
     * @return the brokers of a topic's partition: replicas go round the brokers (by id), each partition starting one
     *     further on from a start the topic's name picks, so leaders spread
     */
    private List<Integer> placement(String topic, int partition, int replicationFactor) {
        List<Integer> ids = groups.cluster().nodes().stream().map(ClusterSpec.Node::id).sorted().toList();
        int start = Math.floorMod(topic.hashCode(), ids.size());
        List<Integer> nodes = new ArrayList<>();
        for (int r = 0; r < replicationFactor; r++) {
            nodes.add(ids.get((start + partition + r) % ids.size()));
        }
        return nodes;
    }

    /**
     * Creates a replicated topic with its configs, its groups named by its id; completes once this node applied its
     * creation (the entry itself: a topic of that name this node has not yet seen deleted is another).
     */
    CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                        Map<String, String> configs) {
        int brokers = groups.cluster().nodes().size();
        if (replicationFactor < 1 || replicationFactor > brokers) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("replication factor "
                    + replicationFactor + " cannot be met by a cluster of " + brokers + " brokers"));
        }
        if (partitions < 1 || partitions > maxPartitions) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("the partition count must be between 1"
                    + " and " + maxPartitions + ", was " + partitions));
        }
        List<List<Integer>> replicas = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            replicas.add(placement(topic, p, replicationFactor));
        }
        // The id is chosen here, by the broker that takes the request, and logged with the topic: every node keeps
        // the one the log holds.
        return answerAt(new Topic(topic, replicas, configs, TopicIds.random(), true).command()).thenCompose(answer -> {
            if (answer.text().equals("exists")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic
                        + " already exists"));
            }
            if (!answer.text().equals("created")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException(answer.text()));
            }
            return metadata.state().awaitApplied(answer.index());
        });
    }

    /** How many times a deletion is sent again after the topic was given an id between its decision and its entry. */
    private static final int DELETE_ATTEMPTS = 3;

    /**
     * Deletes a replicated topic: the topic of that name this node applied, by its id, so that a deletion never takes a
     * topic created under the name since. Completes once this node applied the deletion (its part of the topic gone).
     */
    CompletableFuture<Void> deleteTopic(String topic) {
        return deleteTopic(topic, DELETE_ATTEMPTS);
    }

    private CompletableFuture<Void> deleteTopic(String topic, int attempts) {
        Topic current = metadata.state().topic(topic);
        if (current == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " does not exist"));
        }
        return answerAt(current.deleteCommand()).thenCompose(answer -> {
            if (answer.text().equals(MetadataCommands.TOPIC_DELETED)) {
                return metadata.state().awaitApplied(answer.index());
            }
            if (answer.text().startsWith(MetadataState.ANOTHER_ID) && attempts > 1) {
                // Given its id (a topic from before ids), or deleted and created again, before the entry: decided
                // again on what this node applied by then.
                return metadata.state().awaitApplied(answer.index())
                        .thenComposeAsync(applied -> deleteTopic(topic, attempts - 1));
            }
            return CompletableFuture.failedFuture(answer.text().startsWith("refused: no topic")
                    || answer.text().startsWith(MetadataState.ANOTHER_ID)
                    ? new IllegalArgumentException("topic " + topic + " does not exist")
                    : new IllegalStateException("topic " + topic + " was not deleted: " + answer.text()));
        });
    }

    /** How long the controller waits for the metadata to take a topic's id. */
    private static final long IDENTIFY_TIMEOUT_MILLIS = 10_000;

    /**
     * One round of the controller's duty to give topics created before ids (KIP-516) theirs: while this node is the
     * controller and has applied what its predecessors committed, each topic it knows without an id is given a random
     * one through the metadata ({@code topicid}), so that every node keeps the same. A second controller that gives
     * one too is refused by the log (the first logged stays); a node that is not the controller does nothing.
     */
    void identifyTopics() {
        if (!controllerReady()) {
            return;
        }
        for (String topic : metadata.state().topicsWithoutIds()) {
            Topic named = new Topic(topic, List.of(), Map.of(), TopicIds.random());
            try {
                String answer = answer(named.idCommand()).get(IDENTIFY_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
                if (answer.equals(MetadataState.IDENTIFIED)) {
                    LOG.info("topic {}, created before topic ids, has the id {}", topic, named.id());
                } else {
                    LOG.debug("topic {} was not given the id {}: {}", topic, named.id(), answer);
                }
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                LOG.warn("topic {} could not be given an id now (tried again later): {}", topic, e.toString());
                return;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** How many times a change of a topic's configs is made again after another change came first. */
    private static final int CONFIGS_ATTEMPTS = 10;

    /**
     * Changes a replicated topic's configs: {@code change} is made on the configs this node applied, and logged to
     * replace those only; if another change was logged first, it is made again once this node applied that one.
     * Completes once this node applied the change.
     */
    CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change) {
        return alterTopicConfigs(topic, change, CONFIGS_ATTEMPTS);
    }

    private CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change,
                                                      int attempts) {
        Topic current = metadata.state().topic(topic);
        if (current == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " does not exist"));
        }
        Map<String, String> next;
        try {
            next = change.apply(current.configs());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return answer(current.withConfigs(next).configsCommand(current.configs())).thenCompose(answer -> {
            if (answer.startsWith(MetadataState.CONFIGURED)) {
                return metadata.state().awaitApplied(Long.parseLong(answer.substring(
                        MetadataState.CONFIGURED.length())));
            }
            if (answer.startsWith(MetadataState.CONFIGS_CHANGED) && attempts > 1) {
                // Made again once this node applied the change that came first (logged before the refusal).
                return metadata.state().awaitApplied(Long.parseLong(answer.substring(
                        MetadataState.CONFIGS_CHANGED.length())))
                        .thenComposeAsync(applied -> alterTopicConfigs(topic, change, attempts - 1));
            }
            // Another change came first each time (or the log refused it otherwise): not the request's fault.
            return CompletableFuture.failedFuture(answer.startsWith("refused: no topic")
                    ? new IllegalArgumentException("topic " + topic + " does not exist")
                    : new IllegalStateException("the configs of " + topic + " were not changed: " + answer));
        });
    }

    /** @return the security record's text as this node applied it */
    String securityRecord(String kind) {
        return metadata.state().security(kind);
    }

    /**
     * Changes a security record through the metadata log: made on the text this node has, taken only if the log's
     * text is still that one, else made again once this node applied the change that came first.
     */
    CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change) {
        return alterSecurityRecord(kind, change, CONFIGS_ATTEMPTS);
    }

    private CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change, int attempts) {
        String current = metadata.state().security(kind);
        String next;
        try {
            next = change.apply(current);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return answer(new MetadataCommands.Security(kind, MetadataCommands.Security.digest(current), next).command())
                .thenCompose(answer -> {
                    if (answer.startsWith(MetadataState.SECURED)) {
                        return metadata.state().awaitApplied(Long.parseLong(answer.substring(
                                MetadataState.SECURED.length())));
                    }
                    if (answer.startsWith(MetadataState.SECURITY_CHANGED) && attempts > 1) {
                        return metadata.state().awaitApplied(Long.parseLong(answer.substring(
                                MetadataState.SECURITY_CHANGED.length())))
                                .thenComposeAsync(applied -> alterSecurityRecord(kind, change, attempts - 1));
                    }
                    return CompletableFuture.failedFuture(new IllegalStateException("the security record " + kind
                            + " was not changed: " + answer));
                });
    }

    /** Gives a replicated topic more partitions; completes once this node applied the growth. */
    CompletableFuture<Void> addPartitions(String topic, int partitions) {
        Topic current = metadata.state().topic(topic);
        if (current == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " does not exist"));
        }
        if (partitions <= current.partitions() || partitions > maxPartitions) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " has "
                    + current.partitions() + " partitions; a new count must be larger and at most "
                    + maxPartitions + ", was " + partitions));
        }
        // The new partitions' replicas go on round the brokers from where the topic's last one left off, as many as
        // its first partition has.
        List<List<Integer>> replicas = new ArrayList<>(current.replicas());
        for (int p = current.partitions(); p < partitions; p++) {
            replicas.add(placement(topic, p, current.replicas().getFirst().size()));
        }
        return answer(new Topic(topic, replicas).growCommand()).thenCompose(answer -> {
            if (!answer.equals("grown")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException(answer));
            }
            return metadata.state().awaitPartitions(topic, partitions).thenApply(grown -> null);
        });
    }

    /** Commits a group's offsets through the metadata group, as the groups' coordinator. */
    CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
        if (offsets.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        String command;
        try {
            command = offsetsCommand(group, offsets);
        } catch (NotLeaderException e) {
            return CompletableFuture.failedFuture(e);
        }
        // The coordinator (the metadata leader) applies a commit before its reply comes: its store has the offsets
        // once this completes, and every other node's soon after.
        return answer(command).thenCompose(answer -> answer.equals("committed")
                ? CompletableFuture.<Void>completedFuture(null)
                : CompletableFuture.failedFuture(answer.startsWith(MetadataCommands.STALE_COORDINATOR)
                        ? new NotLeaderException("the commit reached the metadata after node " + groups.selfId()
                                + " stopped coordinating the groups: " + answer)
                        : new IllegalArgumentException(answer)));
    }

    /**
     * @return the command committing a group's offsets, stamped with the term this node coordinates the groups in: a
     *     commit logged in another term (a retry of its request reaching a later leader) is refused, since the group
     *     may have committed again through that leader meanwhile
     * @throws NotLeaderException if this node does not coordinate the groups (lead the metadata) now
     */
    String offsetsCommand(String group, List<CommittedOffset> offsets) {
        long term = groupsCoordination().epoch();
        if (term < 0) {
            throw new NotLeaderException("node " + groups.selfId() + " does not coordinate the groups now");
        }
        return new MetadataCommands.Offsets(group, offsets, term).command();
    }

    /**
     * Saves a transactional id's state through the metadata group, as the transaction (and groups') coordinator of
     * term {@code term}: refused unless this node coordinates in that term now, and by the log if logged in another.
     */
    CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long term) {
        if (term < 0 || groupsCoordination().epoch() != term) {
            return CompletableFuture.failedFuture(new NotLeaderException("node " + groups.selfId()
                    + " does not coordinate transactions in term " + term + " now"));
        }
        return answer(new MetadataCommands.Transaction(transactionalId, state, term).command()).thenCompose(answer ->
                answer.equals(MetadataState.SAVED) ? CompletableFuture.<Void>completedFuture(null)
                        : CompletableFuture.failedFuture(answer.startsWith(MetadataCommands.STALE_COORDINATOR)
                                ? new NotLeaderException("the state reached the metadata after node " + groups.selfId()
                                        + " stopped coordinating: " + answer)
                                : new IllegalArgumentException(answer)));
    }

    /** @return the last state saved of each transactional id, as this node applied the metadata */
    Map<String, byte[]> savedTransactions() {
        return metadata.state().transactions();
    }

    /** Forgets a group's offsets on every node, as decided by the coordinator; true if forgotten, false if kept. */
    CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision) {
        if (decision.epoch() < 0) {
            return CompletableFuture.failedFuture(new IllegalStateException("node " + groups.selfId()
                    + " did not coordinate the groups when it decided to forget group " + group));
        }
        return answer(new MetadataCommands.Forget(group, decision.applied(), decision.epoch()).command())
                .thenCompose(answer -> switch (answer) {
                    case MetadataCommands.FORGOTTEN -> CompletableFuture.completedFuture(true);
                    case MetadataCommands.KEPT -> CompletableFuture.completedFuture(false);
                    default -> CompletableFuture.failedFuture(new IllegalArgumentException(answer));
                });
    }

    /** Closes both clients. */
    @Override
    public void close() throws IOException {
        try {
            RaftClient sending = client.get();
            if (sending != null) {
                sending.close();
            }
        } finally {
            RaftClient asking = asker;
            if (asking != null) {
                asking.close();
            }
        }
    }
}
