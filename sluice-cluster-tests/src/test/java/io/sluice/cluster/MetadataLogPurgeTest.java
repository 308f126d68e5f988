package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Replication.CommittedOffset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every offset commit is an entry of the metadata group's log: the group takes snapshots, so its log is purged; a
 * node restarts from its own snapshot, and a node away while the leader purged installs the leader's.
 */
class MetadataLogPurgeTest {

    /** A snapshot every 50 entries, in log segments of 4 KiB (about 50 commits each). */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(50, 4096, 1);

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** Commits through the coordinator of the groups (the metadata leader), as a broker does. */
    private void commit(int from, int to) throws Exception {
        for (int offset = from; offset < to; offset++) {
            ClusterNode[] coordinator = {null};
            await("a coordinator", 30, () -> {
                for (int id = 1; id <= 3; id++) {
                    if (cluster.broker(id) != null && cluster.broker(id).node().groupsCoordination().epoch() >= 0) {
                        coordinator[0] = cluster.broker(id).node();
                        return true;
                    }
                }
                return false;
            });
            coordinator[0].commitOffsets("g", List.of(new CommittedOffset("t", 0, offset))).get(30, TimeUnit.SECONDS);
        }
    }

    private long logStart(int id) throws IOException {
        return cluster.broker(id).node().metadataDivision().getRaftLog().getStartIndex();
    }

    private long lastIndex(int id) throws IOException {
        return cluster.broker(id).node().metadataDivision().getRaftLog().getLastEntryTermIndex().getIndex();
    }

    private OptionalLong committed(int id) {
        return cluster.broker(id).node().store().committedOffset("g", "t", 0);
    }

    @Test
    void theMetadataLogIsPurgedAndANodeAwayInstallsTheLeadersSnapshot() throws Exception {
        cluster = new InProcessCluster(dir, TUNING);
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("t", 2);
        commit(0, 300);
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " purged its metadata log", 30, () -> {
                try {
                    return logStart(node) > 0;
                } catch (IOException e) {
                    return false;
                }
            });
        }

        // A follower of the metadata stops; the others commit on and purge past its log's end.
        int away = 3;
        for (int id = 1; id <= 3; id++) {
            if (cluster.broker(id).node().isController()) {
                away = id == 3 ? 2 : 3;
            }
        }
        long awayEnd = lastIndex(away);
        cluster.stop(away);
        commit(300, 700);
        int gone = away;
        for (int id : List.of(1, 2, 3)) {
            if (id == gone) {
                continue;
            }
            await("node " + id + " purged past the stopped node's log", 30, () -> {
                try {
                    return logStart(id) > awayEnd + 1;
                } catch (IOException e) {
                    return false;
                }
            });
        }

        // Back, it starts from its own snapshot and installs the leader's, the entries between never in its log.
        cluster.start(away);
        int back = away;
        await("node " + back + " has the latest commit", 60, () -> committed(back).equals(OptionalLong.of(699)));
        assertThat(logStart(back)).as("node %d's metadata log starts after the entries it missed", back)
                .isGreaterThan(awayEnd + 1);
        assertThat(cluster.broker(back).node().members()).containsExactlyInAnyOrder(1, 2, 3);
        assertThat(cluster.replica(back, "t")).as("node %d hosts its replica of t-0", back).isNotNull();

        // A restart of every node starts each from its own snapshot, with the group's offsets and the topic. Node 1's
        // store also holds positions the cluster does not (as one left of a forgotten group): they go.
        cluster.broker(1).node().store().commitOffset("ghost", "t", 0, 3);
        cluster.broker(1).node().store().commitOffset("g", "t", 1, 4);
        for (int id = 1; id <= 3; id++) {
            cluster.stop(id);
        }
        cluster.startAll();
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " has the latest commit after a restart", 60,
                    () -> committed(node).equals(OptionalLong.of(699)));
            assertThat(cluster.replica(node, "t")).isNotNull();
        }
        assertThat(cluster.broker(1).node().store().committedOffset("ghost", "t", 0)).isEmpty();
        assertThat(cluster.broker(1).node().store().committedOffset("g", "t", 1)).isEmpty();
        commit(700, 701);
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " applies a commit after the restart", 30,
                    () -> committed(node).equals(OptionalLong.of(700)));
        }
    }
}
