package io.sluice.cluster;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What both state machines do when Ratis tells a replica to install its leader's snapshot (its log ends before the
 * first entry of the leader's): the install runs on a thread of its own (Ratis asks again until it is done, and again
 * after a failure), and reads what it needs from the leader through read-only queries on the group.
 *
 * <p>The queries are stale reads (from the leader's applied state, whatever its role now), not linearizable ones:
 * Ratis answers those only from a leader that committed an entry of its term, and a leader whose only reachable
 * follower is the installing replica cannot commit until that replica has installed (the two waited on each other for
 * good). What is read is committed everywhere: a snapshot, and a partition's batches below its end.
 */
final class LeaderSnapshots {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderSnapshots.class);

    private LeaderSnapshots() {
    }

    /** Installs a snapshot from the leader a notice names. */
    @FunctionalInterface
    interface Install {
        /** @return the snapshot installed, or null if nothing is missing */
        TermIndex from(RaftPeerId leader) throws IOException;
    }

    /**
     * Runs an install of the snapshot of the leader {@code roleInfo} names on a thread of its own.
     *
     * @param what the group's name, for the thread and the log
     * @return completes with what {@code install} returns, or fails as it did
     */
    static CompletableFuture<TermIndex> inBackground(RoleInfoProto roleInfo, String what, Install install) {
        if (!roleInfo.getFollowerInfo().hasLeaderInfo()) {
            return CompletableFuture.failedFuture(new IOException("no leader named to install a snapshot from"));
        }
        RaftPeerId leader = RaftPeerId.valueOf(roleInfo.getFollowerInfo().getLeaderInfo().getId().getId());
        CompletableFuture<TermIndex> installed = new CompletableFuture<>();
        Thread.ofVirtual().name("install-" + what).start(() -> {
            try {
                installed.complete(install.from(leader));
            } catch (IOException | RuntimeException e) {
                Throwable cause = e;
                while (cause.getCause() != null && cause.getCause() != cause) {
                    cause = cause.getCause();
                }
                LOG.warn("{}: installing the snapshot of leader {} failed (it is tried again): {}{}", what, leader,
                        e, cause == e ? "" : ", caused by " + cause);
                installed.completeExceptionally(e);
            }
        });
        return installed;
    }

    /** Opens a client of a group that asks its leader first ({@link RaftGroups#leaderClient}). */
    @FunctionalInterface
    interface LeaderClients {
        /** @return a client of {@code group} that asks {@code leader} first */
        RaftClient open(RaftGroupId group, RaftPeerId leader);
    }

    /**
     * A client of the group that asks {@code leader} first, looked up by its id (a member rejoining with an empty
     * group does not know the others yet); it retries a request for up to 4 s.
     *
     * @param builder a builder of the node's clients ({@link RaftGroups#newClient})
     */
    static RaftClient clientOf(RaftClient.Builder builder, RaftGroupId group, RaftPeer leader) {
        return builder.setProperties(new RaftProperties())
                .setRaftGroup(RaftGroup.valueOf(group, leader)).setLeaderId(leader.getId())
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(
                        20, TimeDuration.valueOf(200, TimeUnit.MILLISECONDS))).build();
    }

    /**
     * @return the answer of {@code leader} to a read-only query, as a stale read
     * @throws IOException if it fails or does not answer
     */
    static ByteString ask(RaftClient client, RaftPeerId leader, String query) throws IOException {
        RaftClientReply reply = client.io().sendStaleRead(Message.valueOf(query), 0, leader);
        if (!reply.isSuccess()) {
            throw new IOException("query '" + query + "' failed: " + reply.getException());
        }
        return reply.getMessage().getContent();
    }
}
