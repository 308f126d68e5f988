package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.ratis.protocol.RaftGroupId;

/**
 * The marker of a replica stopped after its log failed, until it is back in its group's configuration:
 * {@code sluice-restarting-<group id>} in the node's Raft directory, written and forced, naming the partition on two
 * lines and, on a third, {@value #REBUILD} if the replica lost batches and is rebuilt empty. A broker restarted while
 * a replica is stopped finds it and goes on with the restart ({@link ReplicaRestarts}).
 */
final class RestartMarker {

    /** The start of a marker's name, which ends with the group's id. */
    static final String PREFIX = "sluice-restarting-";

    /** The line of a marker saying that the replica lost batches and is rebuilt empty. */
    static final String REBUILD = "rebuild";

    private RestartMarker() {
    }

    /** @return the marker of a group's replica, in the node's Raft directory */
    static Path of(Path raftDirectory, RaftGroupId id) {
        return raftDirectory.resolve(PREFIX + id.getUuid());
    }

    /** @return the text of a marker: the partition, and whether its replica is rebuilt empty */
    static String text(ClusterNode.PartitionId partition, boolean rebuild) {
        return partition.topic() + "\n" + partition.partition() + "\n" + (rebuild ? REBUILD + "\n" : "");
    }

    /** Writes (or rewrites) a marker, durably. */
    static void write(Path marker, ClusterNode.PartitionId partition, boolean rebuild) throws IOException {
        DurableFile.write(marker, text(partition, rebuild));
    }

    /** @return whether a marker says its replica is rebuilt empty; an unreadable one does (right whatever it said) */
    static boolean rebuilds(Path marker) {
        try {
            return Files.readAllLines(marker, StandardCharsets.UTF_8).contains(REBUILD);
        } catch (IOException e) {
            return true;
        }
    }
}
