package io.sluice.cluster;

import io.sluice.cluster.ratis.RaftTransport;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

/**
 * How a node's Ratis server is set up: its timeouts, its transport, how its logs are written, snapshotted and purged
 * (docs/cluster.md: "Timeouts", "No commit-index entries", "Snapshots and log purge"), and the TLS of its server and
 * clients ("Raft over mutual TLS").
 */
final class RaftSettings {

    /**
     * The Raft timeouts: a follower suspects its leader after 150-300 ms without a word from it. Ratis's follower sleeps
     * a random timeout and then checks whether it heard from the leader within that timeout, so a dead leader is
     * noticed one to two timeouts after its last heartbeat; the leader sends one every half {@link #RPC_TIMEOUT_MIN}
     * while it has nothing to append.
     */
    static final TimeDuration RPC_TIMEOUT_MIN = TimeDuration.valueOf(150, TimeUnit.MILLISECONDS);
    static final TimeDuration RPC_TIMEOUT_MAX = TimeDuration.valueOf(300, TimeUnit.MILLISECONDS);
    /**
     * How long a leader that stepped down for want of a majority keeps out of elections, and the JVM pause after which
     * Ratis steps a leader down (its default is 10 s for both). A leader steps down once no majority has answered it
     * for {@link #RPC_TIMEOUT_MAX} (Ratis's LeaderStateImpl.checkLeadership).
     */
    static final TimeDuration APPENDER_STEP_DOWN_WAIT = TimeDuration.valueOf(1200, TimeUnit.MILLISECONDS);
    /** The waits between a leader's attempts to a replica after failed ones: 1 ms ten times, 20 ms, then 200 ms. */
    static final String APPENDER_RETRY_POLICY = "1ms,10, 20ms,2000, 200ms,1000000";

    private RaftSettings() {
    }

    /**
     * @param tuning how the partitions' logs are kept
     * @param host the address the server listens on
     * @param port the port it listens on
     * @param raftDirectory where the Raft logs live
     * @param force whether each batch is forced before its log entry is written (SYNC): without, Ratis writes its log
     *     in the background too
     * @return the server's properties
     */
    static RaftProperties properties(ClusterNode.Tuning tuning, String host, int port, Path raftDirectory,
                                     boolean force) {
        RaftProperties properties = new RaftProperties();
        RaftConfigKeys.Rpc.setType(properties, new RaftTransport());
        RaftServerConfigKeys.setStorageDir(properties, List.of(raftDirectory.toFile()));
        GrpcConfigKeys.Server.setHost(properties, host);
        GrpcConfigKeys.Server.setPort(properties, port);
        // Ratis's log cache keeps no entry's batches: the state machine keeps those of the entries its leader has in
        // flight, until applied, and sends them to followers from memory; the store is read only for a follower that
        // fell behind.
        RaftServerConfigKeys.Log.StateMachineData.setCachingEnabled(properties, true);
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties, RPC_TIMEOUT_MIN);
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties, RPC_TIMEOUT_MAX);
        // Heartbeats on a channel of their own: a follower busy writing (and forcing) entries still answers them in
        // time, so a slow disk does not cost the leader its leadership. A node back from a restart asks first
        // whether it could win (pre-vote) rather than disrupt a working leader with a higher term.
        GrpcConfigKeys.Server.setHeartbeatChannel(properties, true);
        RaftServerConfigKeys.LeaderElection.setPreVote(properties, true);
        // A leader cut off from its followers steps down after RPC_TIMEOUT_MAX, so the entries it appends and cannot
        // commit meanwhile, which the next leader's log replaces, stay few; it then keeps out of elections, and a JVM
        // pause steps a leader down, after 1.2 s rather than Ratis's 10 s.
        RaftServerConfigKeys.LeaderElection.setLeaderStepDownWaitTime(properties, APPENDER_STEP_DOWN_WAIT);
        // A leader finds where a returning replica's log agrees with its own one entry per round trip, each
        // "inconsistent" answer counted as an error; Ratis's default waits 1 s, then 5 s, between such rounds after
        // ten of them, so a tail of a few dozen entries took minutes to replace.
        RaftServerConfigKeys.Log.Appender.setRetryPolicy(properties, APPENDER_RETRY_POLICY);
        // Snapshots let a partition's log be purged; a replica that needs entries purged from the leader's log
        // copies the batches from the leader's store (PartitionInstall), rather than have Ratis send files.
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, tuning.snapshotEveryEntries());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(properties, true);
        RaftServerConfigKeys.Log.setPurgeGap(properties, (int) Math.min(1024, tuning.snapshotEveryEntries()));
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf(tuning.logSegmentBytes()));
        RaftServerConfigKeys.Log.Appender.setInstallSnapshotEnabled(properties, false);
        // No commit-index entries in the log: Ratis's leader appends one after each advance of the commit index and
        // sends it to the followers like any entry, which with one data entry in flight per partition doubled the
        // entries each node writes, forces and sends (docs/benchmarks.md gives the CPU per record without them). Raft does not need the commit index on disk; a restarted node learns it from its group's leader,
        // and applies its log's entries once it has.
        RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
        if (!force) {
            // ASYNC: an acknowledged batch is in the page cache of a majority, as Kafka's acks=all; the Raft log of
            // entry headers is written and forced in the background, not waited for (Ratis's unsafe flush).
            RaftServerConfigKeys.Log.setUnsafeFlushEnabled(properties, true);
        }
        return properties;
    }

    /**
     * The parameters of a node's Ratis server and of each Raft client it builds: with {@code tls}, Ratis's gRPC
     * transport speaks mutual TLS, without, plain text. Ratis takes the TLS it is given under {@code TLS.conf} for
     * each of its three services (the server's Raft, admin and client services, one port here, as none has a port
     * of its own) and for each of its clients (a server's appender and vote clients, a RaftClient's admin and client
     * calls), unless one of them is given its own; none is.
     *
     * @param tls the node's TLS material, or null for plain text
     * @return new parameters (Ratis keeps them in a mutable map: each server or client gets its own)
     */
    static Parameters parameters(RaftTls tls) {
        Parameters parameters = new Parameters();
        if (tls != null) {
            GrpcConfigKeys.TLS.setConf(parameters, tls.grpcTlsConfig());
        }
        return parameters;
    }
}
