package io.sluice.cluster;

import io.sluice.broker.Replication.CommittedOffset;
import io.sluice.cluster.MetadataCommands.Forget;
import io.sluice.cluster.MetadataCommands.Offsets;
import io.sluice.cluster.MetadataCommands.Topic;
import io.sluice.cluster.MetadataSnapshot.Logged;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node applied of the metadata log ({@link MetadataCommands}): the topics and their replicas, the nodes that
 * took part, and each consumer group's committed offsets, with the callbacks that act on them in the node (create a
 * topic in the store and host its replicas, delete them, keep a group's offsets in the store or forget them). Every
 * node applies the same commands in the same order, so every node's state is alike; a snapshot ({@link #snapshot})
 * holds the commands that rebuild it.
 *
 * <p>Thread-safe: commands are applied by the metadata group's one applying thread (and a start's snapshot before
 * it, {@link MetadataStateMachine#applyStartSnapshot}); any thread reads.
 */
final class MetadataState {

    private static final Logger LOG = LoggerFactory.getLogger(MetadataState.class);

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

    private final Map<String, Topic> topics = new ConcurrentHashMap<>();
    private final Set<Integer> members = ConcurrentHashMap.newKeySet();
    /** Completes once a member record (any node's) is applied here. */
    private final CompletableFuture<Void> anyMember = new CompletableFuture<>();
    /** The log held topics or offsets before any member record (a cluster from before the records). */
    private volatile boolean untracked;
    /** Futures waiting for a topic to have at least a number of partitions here, by topic. */
    private final Map<String, List<Map.Entry<Integer, CompletableFuture<Topic>>>> awaitedGrowth =
            new ConcurrentHashMap<>();
    /** Each group with committed offsets, by store name (applied by the updater alone). */
    private final Map<String, Committed> committed = new ConcurrentHashMap<>();
    /** Each topic's creation and growths as logged, in log order: what a snapshot keeps of it. */
    private final Map<String, List<Logged>> topicEntries = new ConcurrentHashMap<>();
    private final BiConsumer<Topic, Long> onTopic;
    private final PartitionsAdded onPartitions;
    private final Consumer<Offsets> onOffsets;
    private final Consumer<String> onForget;
    private final Consumer<Map<String, Set<ClusterNode.PartitionId>>> keepGroups;
    private final Consumer<Topic> onConfigs;
    private final Consumer<Topic> onId;
    private final Consumer<Topic> onDeleted;
    private final Consumer<MetadataCommands.Barrier> onBarrier;

    /** A group's offsets as the log's commits left them, and the log index of its latest commit. */
    private record Committed(long index, Map<ClusterNode.PartitionId, Long> offsets) {
    }

    /**
     * @param onTopic told of each topic, with the log index of its creation, as this node applies it (and again as
     *     it replays its log)
     * @param onPartitions told of each topic that gained partitions, as this node applies it (and again as it replays
     *     its log)
     * @param onOffsets told of each group's offsets commit as this node applies it
     * @param onForget told of each group (store name) whose offsets the cluster forgets, as this node applies it
     * @param keepGroups told, before a snapshot's commands are applied, of the groups (store names) that have offsets
     *     in it, each with its partitions: any other group the node's store holds, or one
     *     holding other partitions, was forgotten before the snapshot (and committed again), or committed after it
     *     (the log that follows commits it again); the snapshot's commits follow
     * @param onConfigs told of each topic whose configs changed, as it is now, as this node applies the change (and
     *     again as it replays its log)
     * @param onId told of each topic created before ids that was given one, as it is now, as this node applies it (and
     *     again as it replays its log)
     * @param onDeleted told of each topic deleted, as it was, as this node applies the deletion (and again as it
     *     replays its log), or finds in a snapshot it installs that the topic was deleted before it
     * @param onBarrier told of each barrier as this node applies it (any node's)
     */
    MetadataState(BiConsumer<Topic, Long> onTopic, PartitionsAdded onPartitions, Consumer<Offsets> onOffsets,
                  Consumer<String> onForget, Consumer<Map<String, Set<ClusterNode.PartitionId>>> keepGroups,
                  Consumer<Topic> onConfigs, Consumer<Topic> onId, Consumer<Topic> onDeleted,
                  Consumer<MetadataCommands.Barrier> onBarrier) {
        this.onConfigs = onConfigs;
        this.onId = onId;
        this.onDeleted = onDeleted;
        this.onBarrier = onBarrier;
        this.onTopic = onTopic;
        this.onPartitions = onPartitions;
        this.onOffsets = onOffsets;
        this.onForget = onForget;
        this.keepGroups = keepGroups;
    }

    /** @return completes once this node has applied the topic's creation with at least this many partitions */
    CompletableFuture<Topic> awaitPartitions(String name, int partitions) {
        CompletableFuture<Topic> future = new CompletableFuture<>();
        awaitedGrowth.computeIfAbsent(name, n -> new CopyOnWriteArrayList<>())
                .add(Map.entry(partitions, future));
        Topic known = topics.get(name);
        if (known != null && known.partitions() >= partitions) {
            future.complete(known);
        }
        return future;
    }

    /** @return the topic, or null if the cluster has none of that name (as far as this node has applied) */
    Topic topic(String name) {
        return topics.get(name);
    }

    /** @return the topics, as far as this node has applied the log */
    List<Topic> topics() {
        return List.copyOf(topics.values());
    }

    /** @return the log index of a topic's creation, or -1 if the cluster has no topic of that name here */
    long createdAt(String name) {
        List<Logged> entries = topicEntries.get(name);
        return entries == null || entries.isEmpty() ? -1 : entries.getFirst().index();
    }

    /** @return the topics created before ids that have none yet, as far as this node has applied the log */
    List<String> topicsWithoutIds() {
        return topics.values().stream().filter(topic -> topic.id() == null).map(Topic::name).sorted().toList();
    }

    /** @return the nodes recorded as having taken part, as far as this node has applied the log */
    Set<Integer> members() {
        return Set.copyOf(members);
    }

    /**
     * @return completes once this node has applied a record that a node took part: a command sent from then on
     *     follows one in the log, so the log does not look like one from before the records
     */
    CompletableFuture<Void> awaitMembers() {
        return anyMember;
    }


    /** Applies a command logged at {@code index} in {@code term}; @return its answer */
    String apply(String command, long term, long index) {
        try {
            return applyCommand(command, term, index);
        } finally {
            if (index > appliedIndex) {
                appliedIndex = index;
                completeApplied(index);
            }
        }
    }

    private String applyCommand(String command, long term, long index) {
        try {
            if (command.startsWith("member ") || command.startsWith("join ")) {
                return applyMember(command);
            } else if (command.startsWith("offsets ")) {
                return applyOffsets(Offsets.parse(command), term, index);
            } else if (command.startsWith("txn ")) {
                return applyTransaction(MetadataCommands.Transaction.parse(command), term, index);
            } else if (command.startsWith("security ")) {
                return applySecurity(MetadataCommands.Security.parse(command), index);
            } else if (command.startsWith("forget ")) {
                return applyForget(Forget.parse(command), term);
            } else if (command.startsWith("partitions ")) {
                return applyPartitions(Topic.parse("topic" + command.substring("partitions".length())), index);
            } else if (command.startsWith("configs ")) {
                return applyConfigs(Topic.parseConfigs(command), index);
            } else if (command.startsWith("topicid ")) {
                return applyId(Topic.parseIdCommand(command));
            } else if (command.startsWith("delete ")) {
                return applyDelete(Topic.parseDeleteCommand(command));
            } else if (command.startsWith("barrier ")) {
                onBarrier.accept(MetadataCommands.Barrier.parse(command));
                return MetadataCommands.PASSED;
            } else {
                return applyTopic(Topic.parse(command), index);
            }
        } catch (RuntimeException e) {
            // Malformed: every node refuses it alike, and nothing changed.
            return "refused " + e.getMessage();
        }
    }

    private String applyMember(String command) {
        int id = Integer.parseInt(command.substring(command.indexOf(' ') + 1));
        String answer;
        if (command.startsWith("member ")) {
            answer = members.add(id) ? MetadataCommands.RECORDED : "known";
        } else if (members.contains(id) || untracked) {
            return MetadataCommands.TOOK_PART;
        } else {
            members.add(id);
            answer = MetadataCommands.RECORDED;
        }
        anyMember.complete(null);
        return answer;
    }

    private String applyOffsets(Offsets offsets, long term, long index) {
        if (offsets.term() >= 0 && offsets.term() != term) {
            return MetadataCommands.STALE_COORDINATOR + offsets.term() + ", logged in term " + term;
        }
        // Counted before the store takes them: a store that fails half way must not let a forget decided before this
        // commit wipe what it did take.
        committed.compute(offsets.group(), (group, before) -> {
            Map<ClusterNode.PartitionId, Long> now = offsets.byPartition();
            if (before != null) {
                before.offsets().putAll(now);
                now = before.offsets();
            }
            // Deleted offsets go; a group left with none is forgotten (a snapshot lists no empty group).
            now.values().removeIf(offset -> offset == MetadataCommands.DELETED);
            return now.isEmpty() ? null : new Committed(index, now);
        });
        onOffsets.accept(offsets);
        untracked |= members.isEmpty();
        return "committed";
    }

    /** The last state saved of each transactional id, with the index of its entry, by id. */
    private final Map<String, Logged> transactions = new java.util.concurrent.ConcurrentHashMap<>();

    private String applyTransaction(MetadataCommands.Transaction transaction, long term, long index) {
        if (transaction.term() >= 0 && transaction.term() != term) {
            return MetadataCommands.STALE_COORDINATOR + transaction.term() + ", logged in term " + term;
        }
        transactions.put(transaction.transactionalId(), new Logged(index,
                new MetadataCommands.Transaction(transaction.transactionalId(), transaction.state(), -1).command()));
        return SAVED;
    }

    /** The security records by kind, each with the index of its entry and its text. */
    private final Map<String, Logged> security = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, String> securityTexts = new java.util.concurrent.ConcurrentHashMap<>();

    private String applySecurity(MetadataCommands.Security change, long index) {
        String current = securityTexts.getOrDefault(change.kind(), "");
        if (change.expected() != null && !change.expected().equals(MetadataCommands.Security.digest(current))) {
            return SECURITY_CHANGED + index;
        }
        securityTexts.put(change.kind(), change.text());
        security.put(change.kind(), new Logged(index, new MetadataCommands.Security(change.kind(), null,
                change.text()).command()));
        return SECURED + index;
    }

    /** The answer to a security command taken, before its entry's index. */
    static final String SECURED = "secured ";
    /** The answer to a security command made on a text the record no longer has, before its entry's index. */
    static final String SECURITY_CHANGED = "refused: the security record changed before entry ";

    /** @return the security record's text as this node applied it, "" if none */
    String security(String kind) {
        return securityTexts.getOrDefault(kind, "");
    }

    /** The answer to a txn command taken. */
    static final String SAVED = "saved";

    /** @return the last state saved of each transactional id, by id, in the order of their entries */
    Map<String, byte[]> transactions() {
        Map<String, byte[]> states = new java.util.LinkedHashMap<>();
        transactions.values().stream().sorted(Comparator.comparingLong(Logged::index)).forEach(logged -> {
            MetadataCommands.Transaction transaction = MetadataCommands.Transaction.parse(logged.command());
            states.put(transaction.transactionalId(), transaction.state());
        });
        return states;
    }

    private String applyForget(Forget forget, long term) {
        if (term != forget.term()) {
            return MetadataCommands.STALE_COORDINATOR + forget.term() + ", logged in term " + term;
        }
        Committed last = committed.get(forget.group());
        if (last != null && last.index() > forget.unlessCommittedAfter()) {
            return MetadataCommands.KEPT;
        }
        forget(forget.group());
        return MetadataCommands.FORGOTTEN;
    }

    private void forget(String group) {
        committed.remove(group);
        onForget.accept(group);
    }

    private String applyPartitions(Topic grown, long index) {
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
        grown = grown.withConfigs(current.configs()).withId(current.id()).withGroupsOf(current);
        topics.put(grown.name(), grown);
        topicEntries.computeIfAbsent(grown.name(), n -> new CopyOnWriteArrayList<>())
                .add(new Logged(index, grown.growCommand()));
        try {
            onPartitions.added(grown, current.partitions(), index);
        } catch (RuntimeException e) {
            // The cluster has them; this node could not take its part (a full disk, a closed store).
            LOG.error("node cannot host its replicas of topic {}'s new partitions: {}", grown.name(), e.toString());
        }
        Topic now = grown;
        var waiting = awaitedGrowth.get(now.name());
        if (waiting != null) {
            waiting.removeIf(wait -> {
                if (wait.getKey() > now.partitions()) {
                    return false;
                }
                wait.getValue().complete(now);
                return true;
            });
        }
        return "grown";
    }

    /**
     * A topic's configs replaced: the entry kept for snapshots replaces the topic's previous change of configs (its
     * creation's stay, as the first word on them).
     */
    private String applyConfigs(MetadataCommands.ConfigsChange change, long index) {
        Topic current = topics.get(change.topic());
        if (current == null) {
            return "refused: no topic " + change.topic();
        }
        if (change.expected() != null && !change.expected().equals(current.configs())) {
            return CONFIGS_CHANGED + index;
        }
        Topic changed = current.withConfigs(change.configs());
        topics.put(changed.name(), changed);
        List<Logged> entries = topicEntries.computeIfAbsent(changed.name(), n -> new CopyOnWriteArrayList<>());
        entries.removeIf(entry -> entry.command().startsWith("configs "));
        entries.add(new Logged(index, changed.configsCommand(null)));
        try {
            onConfigs.accept(changed);
        } catch (RuntimeException e) {
            // The cluster has them; this node's store could not take them (a full disk, a closed store).
            LOG.error("node cannot keep topic {}'s configs: {}", changed.name(), e.toString());
        }
        return CONFIGURED + index;
    }

    /** How the answer to a configs command begins; the index of its entry follows. */
    static final String CONFIGURED = "configured ";
    /**
     * How the answer to a configs command that expected other configs than the topic had begins; the index of its
     * entry follows (the change that came first is applied by then).
     */
    static final String CONFIGS_CHANGED = "refused: the topic's configs changed before entry ";

    /** The index of the last command applied here, -1 before any. */
    private volatile long appliedIndex = -1;
    /** Futures waiting for this node to apply the entry at an index, by index. */
    private final java.util.NavigableMap<Long, List<CompletableFuture<Void>>> awaitedIndexes =
            new java.util.concurrent.ConcurrentSkipListMap<>();

    /** @return completes once this node applied the entry at {@code index} (a command's, logged by any node) */
    CompletableFuture<Void> awaitApplied(long index) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        awaitedIndexes.computeIfAbsent(index, i -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(future);
        if (appliedIndex >= index) {
            completeApplied(appliedIndex);
        }
        return future;
    }

    private void completeApplied(long index) {
        var due = awaitedIndexes.headMap(index, true);
        due.values().forEach(list -> list.forEach(future -> future.complete(null)));
        due.clear();
    }

    /** The answer to a topicid command that gave the topic its id (or one that names the id it has). */
    static final String IDENTIFIED = "identified";

    /**
     * A topic created before ids is given its id, once: the entry kept for snapshots, its creation, carries the id from
     * then on. A second id for it (two controllers in turn each gave one) is refused, so the first one logged stays on
     * every node; so is an id another topic has.
     */
    private String applyId(Topic named) {
        Topic current = topics.get(named.name());
        if (current == null) {
            return "refused: no topic " + named.name();
        }
        if (named.id().equals(current.id())) {
            return IDENTIFIED;
        }
        if (current.id() != null) {
            return "refused: topic " + current.name() + " has the id " + current.id();
        }
        String holder = topicWithId(named.id());
        if (holder != null) {
            return "refused: the id " + named.id() + " is topic " + holder + "'s";
        }
        Topic identified = current.withId(named.id());
        topics.put(identified.name(), identified);
        List<Logged> entries = topicEntries.get(identified.name());
        if (entries != null && !entries.isEmpty() && entries.getFirst().command().startsWith("topic ")) {
            Logged creation = entries.getFirst();
            entries.set(0, new Logged(creation.index(), Topic.parse(creation.command()).withId(named.id()).command()));
        }
        try {
            onId.accept(identified);
        } catch (RuntimeException e) {
            // The cluster has the id; this node's store could not take it (a full disk, a closed store).
            LOG.error("node cannot keep topic {}'s id: {}", identified.name(), e.toString());
        }
        return IDENTIFIED;
    }

    /** @return the topic that has the id, or null */
    private String topicWithId(java.util.UUID id) {
        for (Topic topic : topics.values()) {
            if (id.equals(topic.id())) {
                return topic.name();
            }
        }
        return null;
    }

    private String applyTopic(Topic topic, long index) {
        String answer;
        if (topic.id() != null && !topics.containsKey(topic.name()) && topicWithId(topic.id()) != null) {
            return "refused: the id " + topic.id() + " is topic " + topicWithId(topic.id()) + "'s";
        }
        if (topics.putIfAbsent(topic.name(), topic) == null) {
            untracked |= members.isEmpty();
            topicEntries.put(topic.name(), new CopyOnWriteArrayList<>(
                    List.of(new Logged(index, topic.command()))));
            answer = "created";
            try {
                onTopic.accept(topic, index);
            } catch (RuntimeException e) {
                // The cluster has the topic; this node could not take its part (a full disk, a closed store).
                LOG.error("node cannot host its replicas of topic {}: {}", topic.name(), e.toString());
            }
        } else {
            answer = "exists";
        }
        return answer;
    }

    /**
     * A topic deleted: refused unless the topic of that name has the id named (or, without one, has none), so that a
     * deletion decided on one topic never deletes another created under its name since.
     */
    private String applyDelete(Topic named) {
        Topic current = topics.get(named.name());
        if (current == null) {
            return "refused: no topic " + named.name();
        }
        if (!java.util.Objects.equals(current.id(), named.id())) {
            return ANOTHER_ID + current.id();
        }
        delete(current);
        return MetadataCommands.TOPIC_DELETED;
    }

    /** How the answer to a delete command naming another id than the topic has begins; the topic's id follows. */
    static final String ANOTHER_ID = "refused: the topic has the id ";

    /**
     * Forgets a topic the cluster deleted, with every group's committed offsets of its partitions (a snapshot keeps
     * neither), and has the node delete its part. Growths waited for fail.
     */
    private void delete(Topic topic) {
        topics.remove(topic.name());
        topicEntries.remove(topic.name());
        var waiting = awaitedGrowth.remove(topic.name());
        if (waiting != null) {
            waiting.forEach(wait -> wait.getValue().completeExceptionally(new IllegalArgumentException("topic "
                    + topic.name() + " does not exist")));
        }
        for (String group : List.copyOf(committed.keySet())) {
            committed.computeIfPresent(group, (name, last) -> {
                last.offsets().keySet().removeIf(partition -> partition.topic().equals(topic.name()));
                return last.offsets().isEmpty() ? null : last;
            });
        }
        try {
            onDeleted.accept(topic);
        } catch (RuntimeException e) {
            // The cluster deleted it; this node could not delete its part (a closed store, a failed disk): what is
            // left goes once the node has caught up after its next start (TopicDeletions.sweep).
            LOG.error("node cannot delete its part of topic {}: {}", topic.name(), e.toString());
        }
    }

    /**
     * The group's log is applied from its start again (a rejoin added the group again, empty): a forget is decided on
     * the indexes of this log's commits, not of the one applied before. The topics and members stay (their commands
     * apply again alike).
     */
    void restartLog() {
        committed.clear();
    }

    /**
     * @return the snapshot of what this node applied: the members (at index -1), then the topics' creations and
     *     growths and one offsets command per group at the index of its latest commit, together in log order
     */
    MetadataSnapshot snapshot() {
        List<Logged> lines = new ArrayList<>();
        members.stream().sorted().forEach(id -> lines.add(new Logged(-1, MetadataCommands.memberCommand(id))));
        List<Logged> logged = new ArrayList<>();
        topicEntries.values().forEach(logged::addAll);
        committed.forEach((group, last) -> {
            List<CommittedOffset> list = new ArrayList<>();
            last.offsets().forEach((partition, offset) -> list.add(new CommittedOffset(partition.topic(),
                    partition.partition(), offset)));
            logged.add(new Logged(last.index(), new Offsets(group, list).command()));
        });
        logged.addAll(transactions.values());
        logged.addAll(security.values());
        logged.sort(Comparator.comparingLong(Logged::index));
        lines.addAll(logged);
        return new MetadataSnapshot(untracked, lines);
    }

    /**
     * Applies a snapshot's commands over what this node applied before (nothing at a start; less than the snapshot
     * after a node behind the leader's log installs it): a topic, partition or member known already stays; a topic
     * created at or below the snapshot's index that the snapshot lacks (or holds another topic of its name) was deleted
     * before it, and is deleted here first; a group whose offsets the snapshot lacks, or holds fewer partitions of, was
     * forgotten before it (and, for the latter, committed again) and is forgotten here first, as is such a group in the
     * store ({@code keepGroups}). A topic created past the snapshot's index (a node that rejoins may have applied more
     * of an earlier log than the snapshot holds) is left to the log that follows.
     *
     * @param index the index of the snapshot's last entry
     */
    void applySnapshot(MetadataSnapshot snapshot, long index) {
        Map<String, Topic> inSnapshot = new HashMap<>();
        for (Logged line : snapshot.lines()) {
            if (line.command().startsWith("topic ")) {
                Topic topic = Topic.parse(line.command());
                inSnapshot.put(topic.name(), topic);
            }
        }
        for (Topic known : topics()) {
            Topic there = inSnapshot.get(known.name());
            long created = createdAt(known.name());
            if (created >= 0 && created <= index && (there == null || !there.is(known.id()))) {
                LOG.info("metadata: topic {} (id {}) was deleted before the snapshot at index {}", known.name(),
                        known.id(), index);
                delete(known);
            }
        }
        untracked |= snapshot.untracked();
        Map<String, Set<ClusterNode.PartitionId>> kept = new HashMap<>();
        for (Logged line : snapshot.lines()) {
            if (line.command().startsWith("offsets ")) {
                Offsets offsets = Offsets.parse(line.command());
                kept.put(offsets.group(), offsets.byPartition().keySet());
            }
        }
        for (String group : List.copyOf(committed.keySet())) {
            Set<ClusterNode.PartitionId> partitions = kept.get(group);
            if (partitions == null || !partitions.containsAll(committed.get(group).offsets().keySet())) {
                forget(group);
            }
        }
        // The store may hold more than this node applied: positions of a start's earlier run, forced in its store.
        keepGroups.accept(Map.copyOf(kept));
        for (Logged line : snapshot.lines()) {
            String command = line.command();
            if (command.startsWith("topic ")) {
                // A topic this node applied before it was given its id (the snapshot's creation line carries it).
                Topic logged = Topic.parse(command);
                Topic known = topics.get(logged.name());
                if (known != null && known.id() == null && logged.id() != null) {
                    command = logged.idCommand();
                }
            }
            String answer = apply(command, -1, line.index());
            if (answer.startsWith("refused")) {
                // A growth this node had applied already.
                LOG.debug("metadata snapshot line {} {} not applied: {}", line.index(), line.command(), answer);
            }
        }
    }
}
