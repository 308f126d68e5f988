package io.sluice.cluster;

import io.sluice.broker.Replication.CommittedOffset;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The metadata group's commands, one per entry of its log, as text (docs/format.md, "Cluster"), and their answers.
 *
 * <p>Commands: {@code topic <name> <partitions> <replicas of 0>;<replicas of 1>;... [<configs> [<id>
 * [groups-by-id]]]} with each replica list comma separated, e.g. {@code topic orders 2 1,2,3;2,3,1}, the topic's
 * configs, if it has any, as {@code name=value} pairs joined by {@code &}, each name and value URL-encoded (UTF-8),
 * e.g. {@code cleanup.policy=compact&retention.ms=1000} ({@code -} for none when an id follows), its id (a UUID's
 * text), which every topic created since ids has, and {@value #GROUPS_BY_ID} for a topic whose partitions' Raft groups
 * are named by its id (every topic created since topics can be deleted; before, by its name);
 * {@code topicid <name> <id>}, which gives a topic created before ids (its command has none) its id, once;
 * {@code delete <name> [<id>]}, which deletes the topic of that name if it has that id (or, without one, if it has
 * none); {@code configs <name> <configs> [<expected>]}, which replaces a topic's
 * configs ({@code -} for none) if it has the expected ones (or whatever it has, without them: a snapshot's command);
 * {@code partitions <name> <partitions>
 * <replicas of 0>;...}, which gives a topic more partitions (the replicas of those it has unchanged, each node hosting
 * its replicas of the new ones); and a consumer group's committed
 * offsets, {@code offsets <group> <topic>:<partition>=<offset>;...}, which every node keeps in its store, and
 * {@code forget <group> <index> <term>}, which removes them from every node's store unless the log holds a commit of
 * the group after entry {@code index} (the coordinator decides to forget a group on what it had applied up to there; a
 * commit the cluster took since keeps the group on every node alike), and is refused in an entry of another term than
 * the one the coordinator decided in (it may have lost its place, and the next coordinator's members). And the record
 * of the nodes that took part (and so may have voted and acknowledged entries), which a node that comes back with no
 * Raft data needs to tell a lost directory from a first start: {@code member <node>}, which a node submits once its
 * member of this group runs, and {@code join <node>}, which a node with no Raft data submits through the others before
 * it starts its member: it answers {@link #TOOK_PART} if the node is recorded (or the log holds topics or offsets from
 * before any record, so that an absence proves nothing), else records the node and answers {@link #RECORDED}.
 */
final class MetadataCommands {

    private MetadataCommands() {
    }

    /** The last word of the command creating a topic whose partitions' Raft groups are named by its id. */
    static final String GROUPS_BY_ID = "groups-by-id";

    /**
     * A topic as the cluster knows it.
     *
     * @param name its name
     * @param replicas for each partition, the node ids of its replicas
     * @param configs its configs (Kafka's topic configs it was given), by name
     * @param id its id (KIP-516), or null for a topic created before ids that the controller has not given one yet
     * @param groupsById whether its partitions' Raft groups are named by its id (every topic created since topics can
     *     be deleted, so that one created again under a deleted topic's name has other groups); false for a topic
     *     created before, whose groups are named by its name and keep those names
     */
    record Topic(String name, List<List<Integer>> replicas, Map<String, String> configs, UUID id,
                 boolean groupsById) {

        Topic {
            replicas = replicas.stream().map(List::copyOf).toList();
            configs = Collections.unmodifiableSortedMap(new TreeMap<>(configs));
            if (groupsById && id == null) {
                throw new IllegalArgumentException("topic " + name + "'s groups cannot be named by an id it lacks");
            }
        }

        /** A topic whose groups are named by its name. */
        Topic(String name, List<List<Integer>> replicas, Map<String, String> configs, UUID id) {
            this(name, replicas, configs, id, false);
        }

        /** A topic without an id. */
        Topic(String name, List<List<Integer>> replicas, Map<String, String> configs) {
            this(name, replicas, configs, null);
        }

        /** A topic without configs of its own, nor an id. */
        Topic(String name, List<List<Integer>> replicas) {
            this(name, replicas, Map.of());
        }

        int partitions() {
            return replicas.size();
        }

        /** @return this topic with other configs */
        Topic withConfigs(Map<String, String> other) {
            return new Topic(name, replicas, other, id, groupsById);
        }

        /** @return this topic with an id */
        Topic withId(UUID other) {
            return new Topic(name, replicas, configs, other, groupsById);
        }

        /** @return this topic, its groups named as {@code other}'s are (a growth's command does not say) */
        Topic withGroupsOf(Topic other) {
            return new Topic(name, replicas, configs, id, other.groupsById);
        }

        /**
         * Whether a topic of this name with the id {@code otherId} is this topic rather than another one of the same
         * name, deleted before this one was created or created after it was deleted. Ids tell topics apart; a topic
         * with no id was created before ids, before topics could be deleted, and so before any topic named by its id.
         *
         * @param otherId the other's id, or null for none
         */
        boolean is(UUID otherId) {
            return otherId == null ? !groupsById : otherId.equals(id);
        }

        /**
         * @return the command creating the topic, with its configs, id and the naming of its groups (none of them: the
         *     four words of logs before configs; configs only: the five words of logs before ids; no naming: the six
         *     words of logs before topics could be deleted)
         */
        String command() {
            String configured = id != null ? " " + word(configs) + " " + id + (groupsById ? " " + GROUPS_BY_ID : "")
                    : configs.isEmpty() ? "" : " " + encode(configs);
            return "topic " + name + " " + replicas.size() + " " + replicaLists() + configured;
        }

        /** @return the command deleting this topic (and no other of its name) */
        String deleteCommand() {
            return "delete " + name + (id == null ? "" : " " + id);
        }

        /** @return the command giving the topic, created before ids, its id */
        String idCommand() {
            return "topicid " + name + " " + id;
        }

        /** @throws IllegalArgumentException if the text is not a topicid command */
        static Topic parseIdCommand(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 || !parts[0].equals("topicid")) {
                throw new IllegalArgumentException("not a topicid command: " + command);
            }
            return new Topic(parts[1], List.of(), Map.of(), parseId(parts[2]));
        }

        private static UUID parseId(String text) {
            UUID id = UUID.fromString(text);
            if (id.getMostSignificantBits() == 0 && id.getLeastSignificantBits() == 0) {
                throw new IllegalArgumentException("a topic id cannot be the zero UUID");
            }
            return id;
        }

        private String replicaLists() {
            StringBuilder text = new StringBuilder();
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
            return "partitions " + name + " " + replicas.size() + " " + replicaLists();
        }

        /**
         * @return the command giving the topic its configs, replacing {@code expected}: it is refused if the topic
         *     has other configs when it is applied (null: whatever it has, as a snapshot's command replaces them)
         */
        String configsCommand(Map<String, String> expected) {
            return "configs " + name + " " + word(configs) + (expected == null ? "" : " " + word(expected));
        }

        private static String word(Map<String, String> configs) {
            return configs.isEmpty() ? "-" : encode(configs);
        }

        /** @throws IllegalArgumentException if the text is not a topic command */
        static Topic parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length < 4 || parts.length > 7 || !parts[0].equals("topic")
                    || parts.length == 7 && !parts[6].equals(GROUPS_BY_ID)) {
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
            if (parts.length >= 6) {
                return new Topic(parts[1], replicas, unword(parts[4]), parseId(parts[5]), parts.length == 7);
            }
            return new Topic(parts[1], replicas, parts.length == 5 ? decode(parts[4]) : Map.of());
        }

        /**
         * @return the change of a {@code configs <name> <configs> [<expected>]} command
         * @throws IllegalArgumentException if the text is not one
         */
        static ConfigsChange parseConfigs(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 && parts.length != 4 || !parts[0].equals("configs")) {
                throw new IllegalArgumentException("not a configs command: " + command);
            }
            return new ConfigsChange(parts[1], unword(parts[2]), parts.length == 4 ? unword(parts[3]) : null);
        }

        private static Map<String, String> unword(String word) {
            return word.equals("-") ? Map.of() : decode(word);
        }

        /**
         * @return the topic a {@code delete <name> [<id>]} command deletes: its name and id (null for none), nothing
         *     else known
         * @throws IllegalArgumentException if the text is not a delete command
         */
        static Topic parseDeleteCommand(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 2 && parts.length != 3 || !parts[0].equals("delete") || parts[1].isEmpty()) {
                throw new IllegalArgumentException("not a delete command: " + command);
            }
            return new Topic(parts[1], List.of(), Map.of(), parts.length == 3 ? parseId(parts[2]) : null);
        }
    }

    /**
     * A node's barrier in the metadata log: {@code barrier <node> <token>}, submitted once a node starts, with a token
     * it chose for that start. When the node applies it, it has applied everything committed before it, as every
     * node that started since then has: what its metadata lacks was deleted, and its store and Raft directory may be
     * rid of what is left of it ({@link TopicDeletions#sweep}). Every other node applies it as nothing.
     *
     * @param node the node that submitted it
     * @param token the token its start chose
     */
    record Barrier(int node, long token) {

        String command() {
            return "barrier " + node + " " + token;
        }

        /** @throws IllegalArgumentException if the text is not a barrier command */
        static Barrier parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 || !parts[0].equals("barrier")) {
                throw new IllegalArgumentException("not a barrier command: " + command);
            }
            return new Barrier(Integer.parseInt(parts[1]), Long.parseLong(parts[2]));
        }
    }

    /**
     * A change of a topic's configs.
     *
     * @param topic the topic
     * @param configs the configs it is to have
     * @param expected the configs it must have for the change to be made, or null for any
     */
    record ConfigsChange(String topic, Map<String, String> configs, Map<String, String> expected) {
    }

    /** @return the configs as one word: {@code name=value} pairs joined by {@code &}, each part URL-encoded */
    static String encode(Map<String, String> configs) {
        StringBuilder text = new StringBuilder();
        configs.forEach((name, value) -> text.append(text.isEmpty() ? "" : "&")
                .append(URLEncoder.encode(name, StandardCharsets.UTF_8)).append('=')
                .append(URLEncoder.encode(value, StandardCharsets.UTF_8)));
        return text.toString();
    }

    /** @throws IllegalArgumentException if the word is not configs as {@link #encode} writes them */
    static Map<String, String> decode(String word) {
        Map<String, String> configs = new TreeMap<>();
        for (String pair : word.split("&")) {
            int equals = pair.indexOf('=');
            if (equals <= 0) {
                throw new IllegalArgumentException("not a config: " + pair);
            }
            configs.put(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
                    URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
        }
        return configs;
    }

    /** The offset an offsets command gives a partition whose committed offset is deleted (OffsetDelete). */
    static final long DELETED = io.sluice.broker.Replication.DELETED_OFFSET;

    /**
     * A consumer group's committed offsets.
     *
     * @param group the group's store name
     * @param offsets the partitions' next offsets
     * @param term the term the coordinator led the metadata group in when it took the commit: an entry of another term
     *     (its request reached the log only through a later leader, after the coordinator lost its place and the group
     *     may have committed again through the next one) is refused; -1 for none (a snapshot's lines, and the commits
     *     of logs written before commits carried it)
     */
    record Offsets(String group, List<CommittedOffset> offsets, long term) {

        /** Offsets without a term, as a snapshot holds them. */
        Offsets(String group, List<CommittedOffset> offsets) {
            this(group, offsets, -1);
        }

        String command() {
            StringBuilder text = new StringBuilder("offsets ").append(group).append(' ');
            for (int i = 0; i < offsets.size(); i++) {
                var offset = offsets.get(i);
                text.append(i == 0 ? "" : ";").append(offset.topic()).append(':').append(offset.partition())
                        .append('=').append(offset.offset());
            }
            return term < 0 ? text.toString() : text.append(' ').append(term).toString();
        }

        /** @return the offsets by partition, in topic and partition order (a map of its own) */
        SortedMap<ClusterNode.PartitionId, Long> byPartition() {
            SortedMap<ClusterNode.PartitionId, Long> map = new TreeMap<>(
                    Comparator.comparing(ClusterNode.PartitionId::topic)
                            .thenComparingInt(ClusterNode.PartitionId::partition));
            offsets.forEach(offset -> map.put(new ClusterNode.PartitionId(offset.topic(), offset.partition()),
                    offset.offset()));
            return map;
        }

        /** @throws IllegalArgumentException if the text is not an offsets command */
        static Offsets parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 && parts.length != 4 || !parts[0].equals("offsets")) {
                throw new IllegalArgumentException("not an offsets command: " + command);
            }
            List<CommittedOffset> offsets = new ArrayList<>();
            for (String item : parts[2].split(";")) {
                int colon = item.lastIndexOf(':');
                int equals = item.lastIndexOf('=');
                if (colon <= 0 || equals < colon) {
                    throw new IllegalArgumentException("not a committed offset: " + item);
                }
                offsets.add(new CommittedOffset(item.substring(0, colon),
                        Integer.parseInt(item.substring(colon + 1, equals)), Long.parseLong(item.substring(equals + 1))));
            }
            return new Offsets(parts[1], offsets, parts.length == 4 ? Long.parseLong(parts[3]) : -1);
        }
    }

    /**
     * A transactional id's state as the transaction coordinator (the groups' coordinator, the metadata leader) saved it:
     * {@code txn <id> <state> [<term>]}, the id and the state's bytes each base64 (URL-safe, unpadded). Every node keeps
     * the last of each id, so that the next coordinator resumes the transactions; refused in an entry of another term
     * than the coordinator's (it lost its place, and the next coordinator may have changed the id since).
     *
     * @param transactionalId the transactional id
     * @param state the coordinator's encoding of its state
     * @param term the coordinator's term, -1 for none (a snapshot's lines)
     */
    record Transaction(String transactionalId, byte[] state, long term) {

        String command() {
            java.util.Base64.Encoder base64 = java.util.Base64.getUrlEncoder().withoutPadding();
            String text = "txn " + base64.encodeToString(transactionalId.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    + " " + base64.encodeToString(state);
            return term < 0 ? text : text + " " + term;
        }

        /** @throws IllegalArgumentException if the text is not a txn command */
        static Transaction parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 && parts.length != 4 || !parts[0].equals("txn")) {
                throw new IllegalArgumentException("not a txn command: " + command);
            }
            java.util.Base64.Decoder base64 = java.util.Base64.getUrlDecoder();
            return new Transaction(new String(base64.decode(parts[1]), java.nio.charset.StandardCharsets.UTF_8),
                    base64.decode(parts[2]), parts.length == 4 ? Long.parseLong(parts[3]) : -1);
        }
    }

    /**
     * A security record of the cluster (the SCRAM credentials, the ACLs) set whole: {@code security <kind> <expected>
     * <text>}, the text base64 (URL-safe, unpadded; "-" for the empty text), applied only if the record's text had the
     * SHA-256 {@code expected} (hex), or whatever it had when {@code expected} is "-" (a snapshot's lines), so that
     * changes made through several brokers at once all count (a refused one is made again on the newer text).
     *
     * @param kind the record's kind, a short lowercase word
     * @param expected the digest of the text the change was made on, or null for none
     * @param text the record's new text
     */
    record Security(String kind, String expected, String text) {

        String command() {
            String encoded = text.isEmpty() ? "-" : java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
                    text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return "security " + kind + " " + (expected == null ? "-" : expected) + " " + encoded;
        }

        /** @throws IllegalArgumentException if the text is not a security command */
        static Security parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 4 || !parts[0].equals("security") || !parts[1].matches("[a-z]{1,16}")) {
                throw new IllegalArgumentException("not a security command: " + command);
            }
            String text = parts[3].equals("-") ? "" : new String(java.util.Base64.getUrlDecoder().decode(parts[3]),
                    java.nio.charset.StandardCharsets.UTF_8);
            return new Security(parts[1], parts[2].equals("-") ? null : parts[2], text);
        }

        /** @return the digest a change made on {@code text} names */
        static String digest(String text) {
            try {
                return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                        .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-256 is missing from the JDK", e);
            }
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

    /** The answer to a delete command that deleted its topic. */
    static final String TOPIC_DELETED = "deleted";

    /** The answer to a barrier command. */
    static final String PASSED = "passed";

    /** The answer to a forget command whose group's offsets are gone on every node. */
    static final String FORGOTTEN = "forgotten";

    /** The answer to a forget command whose group committed after the coordinator's decision: every node keeps it. */
    static final String KEPT = "kept";

    /** The answer to {@code join <node>} for a node that took part, or may have. */
    static final String TOOK_PART = "took-part";

    /** The answer to {@code join <node>} for a node that had not: it is recorded now, before it takes part. */
    static final String RECORDED = "recorded";

    /** @return the command recording that node {@code id} took part */
    static String memberCommand(int id) {
        return "member " + id;
    }

    /** @return the command a node with no Raft data submits to learn whether it took part */
    static String joinCommand(int id) {
        return "join " + id;
    }

    /** How an answer refusing a coordinator's command logged in another term than its own begins. */
    static final String STALE_COORDINATOR = "refused: decided by the coordinator of term ";
}
