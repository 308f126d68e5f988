package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.SizeInBytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metadata's snapshot: what a node that starts from it (or installs it, behind the leader's purged log) applies
 * leaves it where the log's commands left the node that wrote it.
 */
class MetadataSnapshotTest {

    /** A metadata state machine and what it told its node. */
    private static final class Node {
        final List<String> told = new ArrayList<>();
        final List<Map<String, Set<ClusterNode.PartitionId>>> kept = new ArrayList<>();
        final MetadataStateMachine machine = new MetadataStateMachine(
                (topic, index) -> told.add("topic " + topic.name() + " " + topic.partitions() + " @" + index),
                (topic, before, index) -> told.add("grown " + topic.name() + " " + before + "->"
                        + topic.partitions() + " @" + index),
                offsets -> told.add(offsets.command()), group -> told.add("forget " + group), kept::add,
                topic -> told.add("configs " + topic.name() + " " + topic.configs()),
                topic -> told.add("id " + topic.name() + " " + topic.id()),
                topic -> told.add("deleted " + topic.name() + " " + topic.id()), barrier -> { },
                (group, leader) -> null);
        long index;

        String apply(String command) throws Exception {
            LogEntryProto entry = LogEntryProto.newBuilder().setTerm(1).setIndex(index++).setStateMachineLogEntry(
                    StateMachineLogEntryProto.newBuilder().setLogData(ByteString.copyFromUtf8(command))).build();
            TransactionContext context = TransactionContext.newBuilder().setStateMachine(machine)
                    .setServerRole(RaftPeerRole.FOLLOWER).setLogEntry(entry).build();
            return machine.applyTransaction(context).get().getContent().toStringUtf8();
        }
    }

    private static final ClusterNode.PartitionId T0 = new ClusterNode.PartitionId("t", 0);
    private static final ClusterNode.PartitionId T1 = new ClusterNode.PartitionId("t", 1);

    /** The log of a node with a topic that grew, two groups of which one was forgotten, and three members. */
    private static Node written() throws Exception {
        Node node = new Node();
        node.apply(MetadataCommands.memberCommand(1));
        node.apply(MetadataCommands.memberCommand(2));
        node.apply("topic t 1 1,2,3");
        node.apply("offsets g t:0=5");
        node.apply("partitions t 3 1,2,3;2,3,1;3,1,2");
        node.apply("offsets g t:1=7");
        node.apply("offsets h t:0=1");
        assertThat(node.apply("forget h 6 1")).isEqualTo(MetadataCommands.FORGOTTEN);
        assertThat(node.apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.RECORDED);
        node.apply("topic u 1 2");
        return node;
    }

    @Test
    void aNodeStartingFromASnapshotHasWhatTheLogLeftAndAnswersAlike() throws Exception {
        Node writer = written();
        String text = writer.machine.state().snapshot().text();
        Node reader = new Node();
        reader.machine.state().applySnapshot(MetadataSnapshot.parse(text), Long.MAX_VALUE);

        assertThat(reader.told).containsExactly("topic t 1 @2", "grown t 1->3 @4", "offsets g t:0=5;t:1=7",
                "topic u 1 @9");
        assertThat(reader.kept).containsExactly(Map.of("g", Set.of(T0, T1)));
        assertThat(reader.machine.state().members()).containsExactlyInAnyOrder(1, 2, 3);
        assertThat(reader.machine.state().topic("t").replicas()).isEqualTo(writer.machine.state().topic("t").replicas());
        assertThat(reader.machine.state().snapshot().text()).as("a snapshot of the snapshot").isEqualTo(text);
        // The same answers as the writer's to what comes next: g committed after entry 4, a node 3 that took part.
        reader.index = writer.index;
        assertThat(reader.apply("forget g 4 1")).isEqualTo(writer.apply("forget g 4 1"))
                .isEqualTo(MetadataCommands.KEPT);
        assertThat(reader.apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.TOOK_PART);
        assertThat(reader.apply("partitions t 2 1,2,3;2,3,1")).startsWith("refused");
    }

    /**
     * A node behind the leader's purged log installs the leader's snapshot over what it had applied: topics it knew are
     * not created again, a group forgotten since is forgotten, a group forgotten and committed again loses the
     * partitions only its old commits had.
     */
    @Test
    void aNodeBehindInstallsASnapshotOverWhatItApplied() throws Exception {
        Node behind = new Node();
        Node writer = new Node();
        for (Node node : List.of(behind, writer)) {
            node.apply(MetadataCommands.memberCommand(1));
            node.apply(MetadataCommands.memberCommand(2));
            node.apply("topic t 1 1,2,3");
            node.apply("offsets g t:0=5");
            node.apply("offsets h t:0=1");
            node.apply("offsets k t:0=3;t:1=4");
        }
        behind.told.clear();
        writer.apply("partitions t 3 1,2,3;2,3,1;3,1,2");
        writer.apply("offsets g t:1=7");
        assertThat(writer.apply("forget h 7 1")).isEqualTo(MetadataCommands.FORGOTTEN);
        assertThat(writer.apply("forget k 8 1")).isEqualTo(MetadataCommands.FORGOTTEN);
        writer.apply("offsets k t:0=9");
        writer.apply(MetadataCommands.joinCommand(3));
        writer.apply("topic u 1 2");

        behind.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                Long.MAX_VALUE);

        assertThat(behind.told).containsExactly("forget h", "forget k", "grown t 1->3 @6", "offsets g t:0=5;t:1=7",
                "offsets k t:0=9", "topic u 1 @12");
        assertThat(behind.kept).containsExactly(Map.of("g", Set.of(T0, T1), "k", Set.of(T0)));
        assertThat(behind.machine.state().snapshot().text()).isEqualTo(writer.machine.state().snapshot().text());
    }

    /**
     * A security record (SCRAM credentials, ACLs): replaced only when the change was made on the text the record has,
     * kept in a snapshot as its last text, which a node behind takes over its older one.
     */
    @Test
    void securityRecordsAreReplacedAsExpectedAndKeptInASnapshot() throws Exception {
        Node writer = new Node();
        Node behind = new Node();
        String first = new MetadataCommands.Security("scram", MetadataCommands.Security.digest(""), "v1\nalice\n")
                .command();
        assertThat(writer.apply(first)).startsWith(MetadataState.SECURED);
        assertThat(behind.apply(first)).startsWith(MetadataState.SECURED);
        // Made on the empty text again, by a broker that had not applied the first change yet: refused.
        assertThat(writer.apply(new MetadataCommands.Security("scram", MetadataCommands.Security.digest(""),
                "v1\nbob\n").command())).startsWith(MetadataState.SECURITY_CHANGED);
        assertThat(writer.machine.state().security("scram")).isEqualTo("v1\nalice\n");
        assertThat(writer.apply(new MetadataCommands.Security("scram", MetadataCommands.Security.digest(
                "v1\nalice\n"), "v1\nalice\nbob\n").command())).startsWith(MetadataState.SECURED);
        assertThat(writer.apply(new MetadataCommands.Security("acls", MetadataCommands.Security.digest(""), "")
                .command())).startsWith(MetadataState.SECURED);
        assertThat(writer.apply("security scram nothex !!!")).startsWith("refused");

        behind.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                Long.MAX_VALUE);
        assertThat(behind.machine.state().security("scram")).isEqualTo("v1\nalice\nbob\n");
        assertThat(behind.machine.state().security("acls")).isEmpty();
        assertThat(behind.machine.state().snapshot().text()).isEqualTo(writer.machine.state().snapshot().text());
    }

    /**
     * A topic's configs: given at creation, kept through a growth, replaced only when the change expected what the
     * topic had, and in a snapshot as its latest change, which a node behind applies over what it had.
     */
    @Test
    void topicConfigsAreReplacedAsExpectedAndKeptInASnapshot() throws Exception {
        Node behind = new Node();
        Node writer = new Node();
        MetadataCommands.Topic created = new MetadataCommands.Topic("c", List.of(List.of(1, 2, 3)),
                Map.of("cleanup.policy", "compact", "note", "a b&c=d ü"));
        for (Node node : List.of(behind, writer)) {
            node.apply(MetadataCommands.memberCommand(1));
            assertThat(node.apply(created.command())).isEqualTo("created");
        }
        assertThat(writer.machine.state().topic("c").configs()).isEqualTo(created.configs());
        writer.apply("partitions c 2 1,2,3;2,3,1");
        assertThat(writer.machine.state().topic("c").configs()).as("kept through a growth")
                .isEqualTo(created.configs());
        MetadataCommands.Topic changed = created.withConfigs(Map.of("retention.ms", "5"));
        assertThat(writer.apply(changed.configsCommand(Map.of("retention.ms", "1"))))
                .as("a change that expected other configs").startsWith(MetadataState.CONFIGS_CHANGED);
        assertThat(writer.machine.state().topic("c").configs()).isEqualTo(created.configs());
        assertThat(writer.apply(changed.configsCommand(created.configs()))).startsWith(MetadataState.CONFIGURED);
        assertThat(writer.told).endsWith("configs c {retention.ms=5}");
        MetadataCommands.Topic cleared = changed.withConfigs(Map.of());
        assertThat(writer.apply(cleared.configsCommand(changed.configs()))).startsWith(MetadataState.CONFIGURED);
        assertThat(writer.apply(changed.configsCommand(Map.of()))).startsWith(MetadataState.CONFIGURED);
        assertThat(writer.apply("configs nosuch - -")).startsWith("refused: no topic");

        behind.told.clear();
        behind.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                Long.MAX_VALUE);
        assertThat(behind.told).containsExactly("grown c 1->2 @2", "configs c {retention.ms=5}");
        assertThat(behind.machine.state().topic("c").configs()).isEqualTo(Map.of("retention.ms", "5"));
        Node fresh = new Node();
        fresh.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                Long.MAX_VALUE);
        assertThat(fresh.machine.state().topic("c").configs()).isEqualTo(Map.of("retention.ms", "5"));
        assertThat(fresh.machine.state().topic("c").partitions()).isEqualTo(2);
    }

    /**
     * Topic ids (KIP-516): a topic created since ids carries its id in its command; one created before (its command
     * has none, as old logs and snapshots hold it) is given one once ({@code topicid}), never a second, never another
     * topic's; a snapshot holds each topic's creation with its id, which a node that applied the topic before its id
     * takes when it installs the snapshot.
     */
    @Test
    void topicIdsGoThroughTheLogOnceAndIntoSnapshots() throws Exception {
        UUID first = UUID.fromString("6a0c3f5e-1d2b-4c8a-9e7f-0123456789ab");
        UUID second = UUID.fromString("0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f");
        UUID fresh = UUID.fromString("11111111-2222-4333-8444-555555555555");
        Node behind = new Node();
        Node writer = new Node();
        for (Node node : List.of(behind, writer)) {
            node.apply(MetadataCommands.memberCommand(1));
            node.apply("topic old 2 1,2,3;2,3,1 cleanup.policy=compact");
            node.apply("topic plain 1 1");
        }
        MetadataCommands.Topic created = new MetadataCommands.Topic("new", List.of(List.of(1)), Map.of(), fresh);
        assertThat(created.command()).isEqualTo("topic new 1 1 - " + fresh);
        assertThat(MetadataCommands.Topic.parse(created.command())).isEqualTo(created);
        MetadataCommands.Topic configured = created.withConfigs(Map.of("retention.ms", "5"));
        assertThat(MetadataCommands.Topic.parse(configured.command())).isEqualTo(configured);
        assertThat(writer.apply(created.command())).isEqualTo("created");
        assertThat(writer.machine.state().topic("new").id()).isEqualTo(fresh);
        assertThat(writer.machine.state().topicsWithoutIds()).containsExactly("old", "plain");

        assertThat(writer.apply("topicid old " + first)).isEqualTo(MetadataState.IDENTIFIED);
        assertThat(writer.told).endsWith("id old " + first);
        assertThat(writer.apply("topicid old " + second)).as("a second id").startsWith("refused");
        assertThat(writer.apply("topicid old " + first)).as("the same id again").isEqualTo(MetadataState.IDENTIFIED);
        assertThat(writer.apply("topicid plain " + fresh)).as("another topic's id").startsWith("refused");
        assertThat(writer.apply("topicid nosuch " + second)).startsWith("refused: no topic");
        assertThat(writer.apply("topicid plain 00000000-0000-0000-0000-000000000000")).startsWith("refused");
        assertThat(writer.apply(new MetadataCommands.Topic("other", List.of(List.of(1)), Map.of(), first).command()))
                .as("a creation with another topic's id").startsWith("refused");
        writer.apply("partitions old 3 1,2,3;2,3,1;3,1,2");
        assertThat(writer.machine.state().topic("old").id()).as("kept through a growth").isEqualTo(first);
        assertThat(writer.machine.state().topic("old").configs()).containsEntry("cleanup.policy", "compact");
        assertThat(writer.machine.state().topicsWithoutIds()).containsExactly("plain");

        String text = writer.machine.state().snapshot().text();
        assertThat(text).contains("1 topic old 2 1,2,3;2,3,1 cleanup.policy=compact " + first + "\n")
                .contains("topic new 1 1 - " + fresh + "\n");
        Node reader = new Node();
        reader.machine.state().applySnapshot(MetadataSnapshot.parse(text), Long.MAX_VALUE);
        assertThat(reader.machine.state().topic("old").id()).isEqualTo(first);
        assertThat(reader.machine.state().topic("new").id()).isEqualTo(fresh);
        assertThat(reader.machine.state().snapshot().text()).isEqualTo(text);

        behind.told.clear();
        behind.machine.state().applySnapshot(MetadataSnapshot.parse(text), Long.MAX_VALUE);
        assertThat(behind.told).contains("id old " + first);
        assertThat(behind.machine.state().topic("old").id()).isEqualTo(first);
        assertThat(behind.machine.state().topic("old").partitions()).isEqualTo(3);
        assertThat(behind.machine.state().snapshot().text()).isEqualTo(text);
    }

    /**
     * Deleting a topic: only the topic of that name with the id named (or, without one, with none), never one created
     * under its name since; with it go every group's committed offsets of its partitions, in the state and its
     * snapshots; the node is told. A topic created since deletions names its groups by its id, in its command and its
     * snapshot line, kept through a growth.
     */
    @Test
    void aDeletionTakesTheTopicWithItsIdAndItsOffsetsAndNoOther() throws Exception {
        UUID first = UUID.fromString("6a0c3f5e-1d2b-4c8a-9e7f-0123456789ab");
        UUID second = UUID.fromString("0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f");
        Node writer = new Node();
        writer.apply(MetadataCommands.memberCommand(1));
        MetadataCommands.Topic created = new MetadataCommands.Topic("d", List.of(List.of(1, 2)), Map.of(), first,
                true);
        assertThat(created.command()).isEqualTo("topic d 1 1,2 - " + first + " groups-by-id");
        assertThat(MetadataCommands.Topic.parse(created.command())).isEqualTo(created);
        assertThat(writer.apply(created.command())).isEqualTo("created");
        writer.apply("partitions d 2 1,2;2,1");
        assertThat(writer.machine.state().topic("d").groupsById()).as("kept through a growth").isTrue();
        writer.apply("topic legacy 1 1");
        writer.apply("offsets g d:0=5;d:1=6;legacy:0=2");
        writer.apply("offsets h d:1=1");

        assertThat(writer.apply("delete d " + second)).as("another id").startsWith(MetadataState.ANOTHER_ID);
        assertThat(writer.apply("delete d")).as("no id, for a topic with one").startsWith(MetadataState.ANOTHER_ID);
        assertThat(writer.apply("delete nosuch")).startsWith("refused: no topic");
        assertThat(writer.apply(writer.machine.state().topic("d").deleteCommand()))
                .isEqualTo(MetadataCommands.TOPIC_DELETED);
        assertThat(writer.told).endsWith("deleted d " + first);
        assertThat(writer.machine.state().topic("d")).isNull();
        assertThat(writer.apply("delete legacy")).isEqualTo(MetadataCommands.TOPIC_DELETED);
        String text = writer.machine.state().snapshot().text();
        assertThat(text).doesNotContain("topic d ").doesNotContain("topic legacy").doesNotContain("offsets h")
                .doesNotContain("d:");

        // Created again under its name: another topic, which the first's deletion does not take.
        MetadataCommands.Topic again = created.withId(second);
        assertThat(writer.apply(again.command())).isEqualTo("created");
        assertThat(writer.apply("delete d " + first)).startsWith(MetadataState.ANOTHER_ID);
        assertThat(writer.machine.state().topic("d").id()).isEqualTo(second);
        assertThat(again.is(second)).isTrue();
        assertThat(again.is(first)).isFalse();
        assertThat(again.is(null)).as("a topic from before ids is older").isFalse();
        assertThat(writer.machine.state().topic("legacy")).isNull();
    }

    /**
     * A node behind installs a snapshot taken after topics it knows were deleted: those created at or below the
     * snapshot's index that it lacks, or holds another topic of the name for, are deleted here first; one created past
     * its index (a node that applied more of an earlier log) is left to the log that follows.
     */
    @Test
    void aNodeBehindInstallingASnapshotDeletesTheTopicsDeletedBeforeIt() throws Exception {
        UUID first = UUID.fromString("6a0c3f5e-1d2b-4c8a-9e7f-0123456789ab");
        UUID second = UUID.fromString("0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f");
        UUID kept = UUID.fromString("11111111-2222-4333-8444-555555555555");
        Node behind = new Node();
        Node writer = new Node();
        for (Node node : List.of(behind, writer)) {
            node.apply(MetadataCommands.memberCommand(1));
            node.apply(new MetadataCommands.Topic("gone", List.of(List.of(1)), Map.of(), first, true).command());
            node.apply(new MetadataCommands.Topic("again", List.of(List.of(1)), Map.of(), kept, true).command());
            node.apply(new MetadataCommands.Topic("stays", List.of(List.of(1)), Map.of(), second, true).command());
        }
        writer.apply("delete gone " + first);
        writer.apply("delete again " + kept);
        UUID recreated = UUID.fromString("22222222-3333-4444-8555-666666666666");
        writer.apply(new MetadataCommands.Topic("again", List.of(List.of(1)), Map.of(), recreated, true).command());
        long snapshotIndex = writer.index - 1;
        // Applied by the node behind only, past the snapshot's index: the snapshot cannot say it was deleted.
        behind.index = writer.index;
        behind.apply(new MetadataCommands.Topic("later", List.of(List.of(1)), Map.of(), UUID.randomUUID(), true)
                .command());
        behind.told.clear();

        behind.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                snapshotIndex);

        assertThat(behind.told).containsExactlyInAnyOrder("deleted gone " + first, "deleted again " + kept,
                "topic again 1 @" + (snapshotIndex));
        assertThat(behind.machine.state().topic("again").id()).isEqualTo(recreated);
        assertThat(behind.machine.state().topic("stays").id()).isEqualTo(second);
        assertThat(behind.machine.state().topic("gone")).isNull();
        assertThat(behind.machine.state().topic("later")).isNotNull();
    }

    /** A snapshot written before ids (topic lines of four and five words) is read as topics without one. */
    @Test
    void aSnapshotFromBeforeIdsIsReadAsTopicsWithoutOne() throws Exception {
        Node old = new Node();
        old.apply(MetadataCommands.memberCommand(1));
        old.apply("topic t 1 1");
        old.apply("topic c 1 1 cleanup.policy=compact");
        String text = old.machine.state().snapshot().text();
        assertThat(text).contains("1 topic t 1 1\n").contains("2 topic c 1 1 cleanup.policy=compact\n");
        Node reader = new Node();
        reader.machine.state().applySnapshot(MetadataSnapshot.parse(text), Long.MAX_VALUE);
        assertThat(reader.machine.state().topicsWithoutIds()).containsExactly("c", "t");
        assertThat(reader.machine.state().topic("c").configs()).containsEntry("cleanup.policy", "compact");
    }

    @Test
    void aLogWithTopicsBeforeAnyRecordStaysUntrackedThroughASnapshot() throws Exception {
        Node writer = new Node();
        writer.apply("topic t 1 1");
        writer.apply(MetadataCommands.memberCommand(1));
        Node reader = new Node();
        reader.machine.state().applySnapshot(MetadataSnapshot.parse(writer.machine.state().snapshot().text()),
                Long.MAX_VALUE);
        assertThat(reader.apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.TOOK_PART);
    }

    @Test
    void aTornOrDamagedSnapshotIsRefused() throws Exception {
        String text = written().machine.state().snapshot().text();
        MetadataSnapshot.parse(text);
        assertThatThrownBy(() -> MetadataSnapshot.parse(text.substring(0, text.length() / 2)))
                .isInstanceOf(IOException.class);
        String damaged = text.replace("offsets g t:0=5", "offsets g t:0=6");
        assertThat(damaged).isNotEqualTo(text);
        assertThatThrownBy(() -> MetadataSnapshot.parse(damaged)).isInstanceOf(IOException.class)
                .hasMessageContaining("checksum");
        assertThatThrownBy(() -> MetadataSnapshot.parse("")).isInstanceOf(IOException.class);
    }

    private static RaftStorage storage(Path directory) throws IOException {
        return storage(directory, RaftStorage.StartupOption.FORMAT);
    }

    private static RaftStorage storage(Path directory, RaftStorage.StartupOption option) throws IOException {
        RaftStorage storage = RaftStorage.newBuilder().setDirectory(directory.toFile()).setOption(option)
                .setStorageFreeSpaceMin(SizeInBytes.ONE_MB).build();
        storage.initialize();
        return storage;
    }

    /** The Raft server a machine is started by: only its id and its (default) properties are asked for. */
    private static RaftServer server() {
        return (RaftServer) Proxy.newProxyInstance(RaftServer.class.getClassLoader(), new Class<?>[] {RaftServer.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "getId" -> RaftPeerId.valueOf("n1");
                    case "getProperties" -> new RaftProperties();
                    case "toString" -> "server n1";
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    private static final RaftGroupId GROUP = RaftGroupId.randomId();

    /**
     * Starts the group in {@code dir}, applies a member, a topic and an offsets command (indexes 0 to 2) and snapshots
     * them.
     *
     * @return the snapshot's text
     */
    private static String snapshotAtTwo(Path dir) throws Exception {
        Node writer = new Node();
        try (RaftStorage raft = storage(dir)) {
            writer.machine.initialize(server(), GROUP, raft);
            writer.apply(MetadataCommands.memberCommand(1));
            writer.apply("topic t 1 1");
            writer.apply("offsets g t:0=5");
            assertThat(writer.machine.takeSnapshot()).isEqualTo(2);
            return writer.machine.state().snapshot().text();
        }
    }

    /** A snapshot is written to the group's directory, forced; the next start of the group applies it. */
    @Test
    void aGroupStartsFromTheSnapshotItsMachineWrote(@TempDir Path dir) throws Exception {
        String text = snapshotAtTwo(dir);
        Node reader = new Node();
        try (RaftStorage raft = storage(dir, RaftStorage.StartupOption.RECOVER)) {
            reader.machine.initialize(server(), GROUP, raft);
            assertThat(reader.machine.applied()).isEqualTo(2);
            assertThat(reader.told).as("nothing applied before the node asks").isEmpty();
            reader.machine.applyStartSnapshot();
            assertThat(reader.told).containsExactly("topic t 1 @1", "offsets g t:0=5");
            assertThat(reader.machine.state().snapshot().text()).isEqualTo(text);
            reader.machine.applyStartSnapshot();
            assertThat(reader.told).as("applied once").hasSize(2);
        }
    }

    /**
     * The metadata's log ends below its snapshot (its tail not written when the node stopped): the group's start
     * closes the open segment before Ratis loads the log (docs/cluster.md, "A log that ends below its snapshot").
     */
    @Test
    void anOpenSegmentBelowTheSnapshotIsClosedAsTheGroupStarts(@TempDir Path dir) throws Exception {
        snapshotAtTwo(dir);
        Path current = dir.resolve("current");
        Path open = OpenSegmentBelowSnapshotTest.segment(current, 0, 2);
        Node reader = new Node();
        try (RaftStorage raft = storage(dir, RaftStorage.StartupOption.RECOVER)) {
            reader.machine.initialize(server(), GROUP, raft);
            assertThat(open).as("the open segment, entries 0 and 1").doesNotExist();
            assertThat(current.resolve("log_0-1")).as("closed, for Ratis to purge").exists();
            assertThat(reader.machine.applied()).isEqualTo(2);
        }
    }

    /**
     * A rejoin removes the group and adds it again, empty, on the same machine: the group's log is applied from its
     * start again. Ratis refused it (an applied index going back), and the metadata stopped applying on that node.
     */
    @Test
    void aGroupAddedAgainEmptyAppliesItsLogFromTheStart(@TempDir Path dir) throws Exception {
        Node node = new Node();
        List<String> log = List.of(MetadataCommands.memberCommand(1), "offsets g t:0=5", "forget g 1 1",
                "offsets g t:0=6");
        List<String> answers = new ArrayList<>();
        try (RaftStorage raft = storage(dir.resolve("first"))) {
            node.machine.initialize(server(), GROUP, raft);
            assertThat(node.machine.getLastAppliedTermIndex()).isEqualTo(TermIndex.INITIAL_VALUE);
            for (String command : log) {
                answers.add(node.apply(command));
            }
        }
        assertThat(answers.get(2)).isEqualTo(MetadataCommands.FORGOTTEN);
        try (RaftStorage raft = storage(dir.resolve("again"))) {
            node.machine.initialize(server(), GROUP, raft);
            // Ratis reads it, unchecked, when it adds the group.
            assertThat(node.machine.getLastAppliedTermIndex()).isEqualTo(TermIndex.INITIAL_VALUE);
            node.index = 0;
            List<String> again = new ArrayList<>();
            for (String command : log) {
                again.add(node.apply(command));
                assertThat(node.machine.applied()).isEqualTo(node.index - 1);
            }
            // The forget is decided on the commits of this log up to its entry, not on those applied before.
            assertThat(again.subList(1, 4)).isEqualTo(answers.subList(1, 4));
        }
    }

    /** A node installing a snapshot reads it from the leader a chunk at a time (one gRPC message each). */
    @Test
    void aSnapshotIsReadAChunkAtATime(@TempDir Path dir) throws Exception {
        Node writer = new Node();
        try (RaftStorage raft = storage(dir)) {
            writer.machine.initialize(server(), GROUP, raft);
            MetadataSnapshot.Source source = query -> {
                try {
                    return writer.machine.query(Message.valueOf(query)).get().getContent();
                } catch (ExecutionException e) {
                    throw new IOException(e.getCause());
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException();
                }
            };
            assertThat(MetadataSnapshot.fetch(source, 7)).as("none yet").isNull();
            writer.apply(MetadataCommands.memberCommand(1));
            writer.apply("topic t 2 1;1");
            for (int i = 0; i < 20; i++) {
                writer.apply("offsets g" + i + " t:0=" + i + ";t:1=" + (2 * i));
            }
            assertThat(writer.machine.takeSnapshot()).isEqualTo(21);

            var read = MetadataSnapshot.fetch(source, 7);
            assertThat(read.getKey()).isEqualTo(TermIndex.valueOf(1, 21));
            assertThat(read.getValue()).isEqualTo(writer.machine.state().snapshot().text()).hasSizeGreaterThan(20 * 7);
            assertThat(MetadataSnapshot.fetch(source, 1 << 20)).isEqualTo(read);
            assertThat(writer.machine.query(Message.valueOf("snapshot 1 20 0 10")))
                    .as("a snapshot the leader does not hold").isCompletedExceptionally();
            assertThat(writer.machine.query(Message.valueOf("snapshot 1 21 100000 10")))
                    .as("past its end").isCompletedExceptionally();
        }
    }
}
