package io.sluice.cluster;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's metadata, replicated on every node by a Raft group of its own: the topics, each partition's
 * replicas, the consumer groups' committed offsets. Every node applies the same commands in the same order and acts on them ({@code onTopic}: create the
 * topic in its store, host the Raft groups of its replicas). The Raft log is the record: a node that starts again
 * replays it (no snapshot is taken, so the log is never purged).
 *
 * <p>Commands are text, one per entry: {@code topic <name> <partitions> <replicas of 0>;<replicas of 1>;...} with
 * each replica list comma separated, e.g. {@code topic orders 2 1,2,3;2,3,1}; {@code partitions <name> <partitions>
 * <replicas of 0>;...}, which gives a topic more partitions (the replicas of those it has unchanged, each node hosting
 * its replicas of the new ones); and a consumer group's committed
 * offsets, {@code offsets <group> <topic>:<partition>=<offset>;...}, which every node keeps in its store, and
 * {@code forget <group> <index> <term>}, which removes them from every node's store unless the log holds a commit of the
 * group after entry {@code index} (the coordinator decides to forget a group on what it had applied up to there; a
 * commit the cluster took since keeps the group on every node alike), and is refused in an entry of another term than
 * the one the coordinator decided in (it may have lost its place, and the next coordinator's members). And the
 * record of the nodes that took part (and so may have voted and acknowledged entries), which a node that comes back
 * with no Raft data needs to tell a lost directory from a first start: {@code member <node>}, which a node submits
 * once its member of this group runs, and {@code join <node>}, which a node with no Raft data submits through the
 * others before it starts its member: it answers {@link #TOOK_PART} if the node is recorded (or the log holds
 * topics or offsets from before any record, so that an absence proves nothing), else records the node and answers
 * {@link #RECORDED}.
 */
final class MetadataStateMachine extends BaseStateMachine {

    private static final Logger LOG = LoggerFactory.getLogger(MetadataStateMachine.class);

    /**
     * A topic as the cluster knows it.
     *
     * @param name its name
     * @param replicas for each partition, the node ids of its replicas
     */
    record Topic(String name, List<List<Integer>> replicas) {

        Topic {
            replicas = replicas.stream().map(List::copyOf).toList();
        }

        int partitions() {
            return replicas.size();
        }

        String command() {
            StringBuilder text = new StringBuilder("topic ").append(name).append(' ').append(replicas.size())
                    .append(' ');
            for (int p = 0; p < replicas.size(); p++) {
                text.append(p == 0 ? "" : ";");
                List<Integer> nodes = replicas.get(p);
                for (int i = 0; i < nodes.size(); i++) {
                    text.append(i == 0 ? "" : ",").append(nodes.get(i));
                }
            }
            return text.toString();
        }

        /** @return the command giving the topic these partitions (more than it has, the first ones unchanged) */
        String growCommand() {
            return "partitions" + command().substring("topic".length());
        }

        /** @throws IllegalArgumentException if the text is not a topic command */
        static Topic parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 4 || !parts[0].equals("topic")) {
                throw new IllegalArgumentException("not a metadata command: " + command);
            }
            int partitions = Integer.parseInt(parts[2]);
            String[] lists = parts[3].split(";");
            if (partitions < 1 || lists.length != partitions) {
                throw new IllegalArgumentException("a topic command with " + partitions + " partitions and "
                        + lists.length + " replica lists: " + command);
            }
            List<List<Integer>> replicas = new ArrayList<>();
            for (String list : lists) {
                List<Integer> nodes = new ArrayList<>();
                for (String node : list.split(",")) {
                    nodes.add(Integer.parseInt(node));
                }
                replicas.add(nodes);
            }
            return new Topic(parts[1], replicas);
        }
    }

    /**
     * A consumer group's committed offsets.
     *
     * @param group the group's store name
     * @param offsets the partitions' next offsets
     */
    record Offsets(String group, List<io.sluice.broker.Replication.CommittedOffset> offsets) {

        String command() {
            StringBuilder text = new StringBuilder("offsets ").append(group).append(' ');
            for (int i = 0; i < offsets.size(); i++) {
                var offset = offsets.get(i);
                text.append(i == 0 ? "" : ";").append(offset.topic()).append(':').append(offset.partition())
                        .append('=').append(offset.offset());
            }
            return text.toString();
        }

        /** @throws IllegalArgumentException if the text is not an offsets command */
        static Offsets parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 || !parts[0].equals("offsets")) {
                throw new IllegalArgumentException("not an offsets command: " + command);
            }
            List<io.sluice.broker.Replication.CommittedOffset> offsets = new ArrayList<>();
            for (String item : parts[2].split(";")) {
                int colon = item.lastIndexOf(':');
                int equals = item.lastIndexOf('=');
                if (colon <= 0 || equals < colon) {
                    throw new IllegalArgumentException("not a committed offset: " + item);
                }
                offsets.add(new io.sluice.broker.Replication.CommittedOffset(item.substring(0, colon),
                        Integer.parseInt(item.substring(colon + 1, equals)), Long.parseLong(item.substring(equals + 1))));
            }
            return new Offsets(parts[1], offsets);
        }
    }

    /**
     * A coordinator's decision to forget a consumer group's committed offsets (a group deleted or expired).
     *
     * @param group the group's store name
     * @param unlessCommittedAfter the log index up to which the coordinator had applied commits when it decided: a
     *     commit of the group at a later index keeps it
     * @param term the term the coordinator led the metadata group in when it decided: an entry of another term (the
     *     coordinator lost its place before the decision reached the log) is refused
     */
    record Forget(String group, long unlessCommittedAfter, long term) {

        String command() {
            return "forget " + group + " " + unlessCommittedAfter + " " + term;
        }

        /** @throws IllegalArgumentException if the text is not a forget command */
        static Forget parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 4 || !parts[0].equals("forget") || parts[1].isEmpty()) {
                throw new IllegalArgumentException("not a forget command: " + command);
            }
            return new Forget(parts[1], Long.parseLong(parts[2]), Long.parseLong(parts[3]));
        }
    }

    /** The answer to a forget command whose group's offsets are gone on every node. */
    static final String FORGOTTEN = "forgotten";

    /** The answer to a forget command whose group committed after the coordinator's decision: every node keeps it. */
    static final String KEPT = "kept";

    /** The answer to {@code join <node>} for a node that took part, or may have. */
    static final String TOOK_PART = "took-part";

    /** The answer to {@code join <node>} for a node that had not: it is recorded now, before it takes part. */
    static final String RECORDED = "recorded";

    private final Map<String, Topic> topics = new ConcurrentHashMap<>();
    private final Set<Integer> members = ConcurrentHashMap.newKeySet();
    /** Futures waiting for a node's member record to be applied here, by node id. */
    private final Map<Integer, CompletableFuture<Void>> awaitedMembers = new ConcurrentHashMap<>();
    /** The log held topics or offsets before any member record (a cluster from before the records). */
    private volatile boolean untracked;
    private final Map<String, CompletableFuture<Topic>> awaited = new ConcurrentHashMap<>();
    /** Futures waiting for a topic to have at least a number of partitions here, by topic. */
    private final Map<String, List<Map.Entry<Integer, CompletableFuture<Topic>>>> awaitedGrowth =
            new ConcurrentHashMap<>();
    private final PartitionsAdded onPartitions;
    /** For each group with committed offsets, the log index of its latest commit (applied by the updater alone). */
    private final Map<String, Long> lastCommits = new ConcurrentHashMap<>();
    private final BiConsumer<Topic, Long> onTopic;
    private final Consumer<Offsets> onOffsets;
    private final Consumer<String> onForget;

    /**
     * @param onTopic told of each topic, with the log index of its creation, as this node applies it (and again as
     *     it replays its log)
     * @param onPartitions told of each topic that gained partitions, as this node applies it (and again as it replays
     *     its log)
     * @param onOffsets told of each group's offsets commit as this node applies it
     * @param onForget told of each group (store name) whose offsets the cluster forgets, as this node applies it
     */
    MetadataStateMachine(BiConsumer<Topic, Long> onTopic, PartitionsAdded onPartitions, Consumer<Offsets> onOffsets,
                         Consumer<String> onForget) {
        this.onTopic = onTopic;
        this.onPartitions = onPartitions;
        this.onOffsets = onOffsets;
        this.onForget = onForget;
    }

    /** Told of a topic that gained partitions. */
    @FunctionalInterface
    interface PartitionsAdded {
        /**
         * @param topic the topic as it is now
         * @param before how many partitions it had
         * @param index the log index of the change
         */
        void added(Topic topic, int before, long index);
    }

    /** @return completes once this node has applied the topic's creation with at least this many partitions */
    CompletableFuture<Topic> awaitPartitions(String name, int partitions) {
        CompletableFuture<Topic> future = new CompletableFuture<>();
        awaitedGrowth.computeIfAbsent(name, n -> new java.util.concurrent.CopyOnWriteArrayList<>())
                .add(Map.entry(partitions, future));
        Topic known = topics.get(name);
        if (known != null && known.partitions() >= partitions) {
            future.complete(known);
        }
        return future;
    }

    /** @return the index of the last log entry this node applied, -1 before any */
    long applied() {
        TermIndex last = getLastAppliedTermIndex();
        return last == null ? -1 : last.getIndex();
    }

    /** @return the topic, or null if the cluster has none of that name (as far as this node has applied) */
    Topic topic(String name) {
        return topics.get(name);
    }

    /** @return the nodes recorded as having taken part, as far as this node has applied the log */
    Set<Integer> members() {
        return Set.copyOf(members);
    }

    /** @return completes once this node has applied a record that node {@code id} took part */
    CompletableFuture<Void> awaitMember(int id) {
        CompletableFuture<Void> future = awaitedMembers.computeIfAbsent(id, n -> new CompletableFuture<>());
        if (members.contains(id)) {
            future.complete(null);
        }
        return future;
    }

    /** @return completes once this node has applied the topic's creation */
    CompletableFuture<Topic> awaitTopic(String name) {
        CompletableFuture<Topic> future = awaited.computeIfAbsent(name, n -> new CompletableFuture<>());
        Topic known = topics.get(name);
        if (known != null) {
            future.complete(known);
        }
        return future;
    }

    /** @return the command recording that node {@code id} took part */
    static String memberCommand(int id) {
        return "member " + id;
    }

    /** @return the command a node with no Raft data submits to learn whether it took part */
    static String joinCommand(int id) {
        return "join " + id;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        String command = entry.getStateMachineLogEntry().getLogData().toString(StandardCharsets.UTF_8);
        String answer;
        try {
            if (command.startsWith("member ") || command.startsWith("join ")) {
                answer = applyMember(command);
            } else if (command.startsWith("offsets ")) {
                answer = applyOffsets(Offsets.parse(command), entry);
            } else if (command.startsWith("forget ")) {
                answer = applyForget(Forget.parse(command), entry);
            } else if (command.startsWith("partitions ")) {
                answer = applyPartitions(Topic.parse("topic" + command.substring("partitions".length())), entry);
            } else {
                answer = applyTopic(Topic.parse(command), entry);
            }
        } catch (RuntimeException e) {
            // Malformed: every node refuses it alike, and nothing changed.
            answer = "refused " + e.getMessage();
        }
        updateLastAppliedTermIndex(TermIndex.valueOf(entry));
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(answer)));
    }

    private String applyMember(String command) {
        int id = Integer.parseInt(command.substring(command.indexOf(' ') + 1));
        String answer;
        if (command.startsWith("member ")) {
            answer = members.add(id) ? RECORDED : "known";
        } else if (members.contains(id) || untracked) {
            return TOOK_PART;
        } else {
            members.add(id);
            answer = RECORDED;
        }
        CompletableFuture<Void> waiting = awaitedMembers.get(id);
        if (waiting != null) {
            waiting.complete(null);
        }
        return answer;
    }

    private String applyOffsets(Offsets offsets, LogEntryProto entry) {
        // Counted before the store takes them: a store that fails half way must not let a forget decided before this
        // commit wipe what it did take.
        lastCommits.put(offsets.group(), entry.getIndex());
        onOffsets.accept(offsets);
        untracked |= members.isEmpty();
        return "committed";
    }

    private String applyForget(Forget forget, LogEntryProto entry) {
        if (entry.getTerm() != forget.term()) {
            return "refused: decided by the coordinator of term " + forget.term() + ", logged in term "
                    + entry.getTerm();
        }
        if (lastCommits.getOrDefault(forget.group(), -1L) > forget.unlessCommittedAfter()) {
            return KEPT;
        }
        lastCommits.remove(forget.group());
        onForget.accept(forget.group());
        return FORGOTTEN;
    }

    private String applyPartitions(Topic grown, LogEntryProto entry) {
        Topic current = topics.get(grown.name());
        if (current == null) {
            return "refused: no topic " + grown.name();
        }
        if (grown.partitions() <= current.partitions()) {
            return "refused: topic " + grown.name() + " has " + current.partitions() + " partitions";
        }
        if (!grown.replicas().subList(0, current.partitions()).equals(current.replicas())) {
            return "refused: the replicas of " + grown.name() + "'s partitions are not " + current.replicas();
        }
        topics.put(grown.name(), grown);
        try {
            onPartitions.added(grown, current.partitions(), entry.getIndex());
        } catch (RuntimeException e) {
            // The cluster has them; this node could not take its part (a full disk, a closed store).
            LOG.error("node cannot host its replicas of topic {}'s new partitions: {}", grown.name(), e.toString());
        }
        var waiting = awaitedGrowth.get(grown.name());
        if (waiting != null) {
            waiting.removeIf(wait -> {
                if (wait.getKey() > grown.partitions()) {
                    return false;
                }
                wait.getValue().complete(grown);
                return true;
            });
        }
        return "grown";
    }

    private String applyTopic(Topic topic, LogEntryProto entry) {
        String answer;
        if (topics.putIfAbsent(topic.name(), topic) == null) {
            untracked |= members.isEmpty();
            answer = "created";
            try {
                onTopic.accept(topic, entry.getIndex());
            } catch (RuntimeException e) {
                // The cluster has the topic; this node could not take its part (a full disk, a closed store).
                LOG.error("node cannot host its replicas of topic {}: {}", topic.name(), e.toString());
            }
        } else {
            answer = "exists";
        }
        awaitTopic(topic.name()).complete(topics.get(topic.name()));
        return answer;
    }
}
