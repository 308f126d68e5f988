package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The file in a node's Raft directory that names the cluster and node its data belong to ({@value #FILE}: {@code
 * cluster.id=<id>} and {@code node.id=<id>}, a line each).
 */
final class NodeIdentity {

    /** The file in a node's Raft directory that names the cluster and node its data belong to. */
    static final String FILE = "sluice-node";

    private NodeIdentity() {
    }

    /**
     * A Raft directory belongs to one node of one cluster: the first start writes which; a later start as another
     * node, or in another cluster, is refused (its logs would be taken for another node's, or joined to groups of
     * another cluster).
     *
     * @param io the file system
     * @param raftDirectory the node's Raft directory, created (durably) if missing
     * @param clusterId the cluster's id: printable ASCII without spaces
     * @param nodeId the node's id
     * @throws IOException if the identity cannot be read or written
     * @throws IllegalStateException if the directory belongs to another node or cluster
     */
    static void check(FileIO io, Path raftDirectory, String clusterId, int nodeId) throws IOException {
        if (clusterId.isBlank() || clusterId.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            throw new IllegalArgumentException("a cluster id is printable ASCII without spaces, not '" + clusterId
                    + "'");
        }
        Path file = raftDirectory.resolve(FILE);
        String identity = "cluster.id=" + clusterId + "\nnode.id=" + nodeId + "\n";
        if (io.exists(file)) {
            String found = DurableFile.read(io, file);
            if (!found.equals(identity)) {
                throw new IllegalStateException(raftDirectory + " holds the Raft logs of "
                        + found.trim().replace('\n', ' ') + ", not of cluster.id=" + clusterId + " node.id=" + nodeId
                        + ": start this node with its own cluster id, node id and directory");
            }
            return;
        }
        // The directory's name is forced into its parent too: a first start cut short by a power cut must not come
        // back as a node that lost its Raft data (docs/cluster.md, "A lost data directory").
        DurableFile.createDirectories(io, raftDirectory);
        DurableFile.write(io, file, file.resolveSibling(FILE + ".tmp"), identity);
    }
}
