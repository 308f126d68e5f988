package io.sluice.cluster;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.grpc.GrpcFactory;
import org.apache.ratis.grpc.server.GrpcLogAppender;
import org.apache.ratis.rpc.RpcFactory;
import org.apache.ratis.rpc.RpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.leader.FollowerInfo;
import org.apache.ratis.server.leader.LeaderState;
import org.apache.ratis.server.leader.LogAppender;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.raftlog.RaftLogIOException;

/**
 * The nodes' Raft transport: Ratis's gRPC, with one change to how a leader serves a replica whose snapshot ends just
 * before the first entry of the leader's purged log.
 *
 * <p>Such a replica's next entry is the leader's first one, and the leader has neither that entry's predecessor nor
 * a snapshot ending there, so Ratis 3.3.0 asks the replica to install a snapshot; the replica answers that it has one
 * up to exactly there, and the leader asks again, forever, never sending the entries. Here the leader sends them (as
 * Ratis allows for a replica whose snapshot ends right before its next entry): the replica appends them after its
 * snapshot.
 */
public final class RaftTransport implements RpcType {

    /** For Ratis, which creates the transport by its class name. */
    public RaftTransport() {
    }

    @Override
    public String name() {
        return RaftTransport.class.getName();
    }

    @Override
    public RpcFactory newFactory(Parameters parameters) {
        return new Factory(parameters);
    }

    private static final class Factory extends GrpcFactory {

        Factory(Parameters parameters) {
            super(parameters);
        }

        @Override
        public LogAppender newLogAppender(RaftServer.Division server, LeaderState state, FollowerInfo follower) {
            return new Appender(server, state, follower);
        }
    }

    private static final class Appender extends GrpcLogAppender {

        Appender(RaftServer.Division server, LeaderState state, FollowerInfo follower) {
            super(server, state, follower);
        }

        /**
         * A heartbeat sent while appends are in flight, or to a replica whose next entry is the first, names no
         * previous entry, and a replica takes min(leader's commit index, 0) as committed from it (Ratis 3.3.0): its
         * own entry 0, which may be one only it has (written by a leader killed before sending it), would count as
         * committed, and it would then refuse the leader's entry 0 as already there and the leader's entry 1 as not
         * following its own 0, for good. Such a heartbeat here carries no commit index; the appends that follow carry
         * it, with the previous entry they check.
         */
        @Override
        public AppendEntriesRequestProto newAppendEntriesRequest(long callId, boolean heartbeat)
                throws RaftLogIOException {
            AppendEntriesRequestProto request = super.newAppendEntriesRequest(callId, heartbeat);
            if (request != null && request.getEntriesCount() == 0 && !request.hasPreviousLog()) {
                return request.toBuilder().setLeaderCommit(RaftLog.INVALID_LOG_INDEX).build();
            }
            return request;
        }

        @Override
        public TermIndex shouldNotifyToInstallSnapshot() {
            FollowerInfo follower = getFollower();
            long next = follower.getNextIndex();
            if (follower.hasAttemptedToInstallSnapshot() && next == follower.getSnapshotIndex() + 1
                    && next == getRaftLog().getStartIndex() && getPrevious(next) == null) {
                return null;
            }
            return super.shouldNotifyToInstallSnapshot();
        }
    }
}
