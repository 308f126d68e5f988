package io.sluice.cluster.ratis;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.grpc.GrpcFactory;
import org.apache.ratis.grpc.server.GrpcLogAppender;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
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
 * The nodes' Raft transport: Ratis's gRPC, with three changes to how a leader serves a replica: one whose snapshot
 * ends just before the first entry of the leader's purged log, one whose install of another leader's snapshot waits for
 * a notice ({@code loading}), and the commit index of appends that name no previous entry (the appender's
 * newAppendEntriesRequest).
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

        /** This leader told the replica to install a snapshot (in its term: an appender serves one). */
        private boolean notified;
        /** The replica's INCONSISTENCY answers, for {@link #loading}. */
        private final StuckInstall answers = new StuckInstall();
        /** When {@link #loading} last notified the replica. */
        private long loadNoticeAt = System.nanoTime() - StuckInstall.STUCK_NANOS;

        Appender(RaftServer.Division server, LeaderState state, FollowerInfo follower) {
            super(server, state, follower);
        }

        /**
         * An append that names no previous entry (a heartbeat sent while appends are in flight or to a replica whose
         * next entry is the first; entries from the first) makes a replica take min(leader's commit index, number of
         * entries) as committed (Ratis 3.3.0), one more than the last entry it carries: a heartbeat marked the
         * replica's own entry 0 committed, and entries 0 to n - 1 that it already has its own entry n, left in
         * place; that entry may be one only it has (written by a leader killed before sending it). It was applied, and
         * the replica refused the leader's entries from then on ("already exists", "previous not found"), for good.
         * Such an append here carries the commit index only up to its own last entry.
         */
        @Override
        public AppendEntriesRequestProto newAppendEntriesRequest(long callId, boolean heartbeat)
                throws RaftLogIOException {
            AppendEntriesRequestProto request = super.newAppendEntriesRequest(callId, heartbeat);
            if (request == null || request.hasPreviousLog()) {
                return request;
            }
            long last = request.getEntriesCount() == 0 ? RaftLog.INVALID_LOG_INDEX
                    : request.getEntries(request.getEntriesCount() - 1).getIndex();
            return request.getLeaderCommit() <= last ? request
                    : request.toBuilder().setLeaderCommit(last).build();
        }

        /**
         * A replica that installed a snapshot on another leader's notice, and did not hear that leader's next notice
         * (it died, or was cut off, in between), keeps its install "in progress" in Ratis 3.3.0, which loads what was
         * installed only at the next notice, and answers every append with INCONSISTENCY and its own next index. A
         * leader whose log holds that index sends it appends, never a notice, and the replica never catches up (a
         * kill round ended so: a partition short of a replica in sync for good). A leader whose log starts past the
         * replica's next index does notify it, at its own first entry, which the replica refuses when its install
         * began at a later first entry (a leader that had purged further): Ratis requires the install under way to
         * have begun at or before the notice's index ("not eligible"). Such a replica answers
         * INCONSISTENCY with the same next index, again and again, its match index standing: after
         * {@link StuckInstall#STUCK_NANOS} of that without a pause ({@link StuckInstall}), it is notified, with an
         * index past this leader's last entry, which is at or past where any leader's notice told it to install from
         * (its install began at some leader's first log entry, at most the commit index then plus one, and this leader
         * has every committed entry).
         * The replica then loads its snapshot and answers SNAPSHOT_INSTALLED with its index, or answers IN_PROGRESS if
         * its install still runs. The sign is the replica's answers, not the indexes the leader keeps for it: a replica
         * catching up moves its match index, one whose log diverges answers a lower next index each time, one down or
         * restarting does not answer, and one whose disk stalls answers heartbeats but never INCONSISTENCY (the next
         * index alone does not tell it apart: it stands above the match index there too). A notice to a replica with
         * no install under way is not harmless: it starts an install, which fails (no snapshot reaches past this
         * leader's last entry) after holding up the replica's appends and failing its pending reads. Notified again
         * after as long, if still so.
         *
         * @return the notice to send, or null
         */
        private TermIndex loading() {
            long now = System.nanoTime();
            if (!answers.stuck(getFollower().getMatchIndex(), now) || now - loadNoticeAt < StuckInstall.STUCK_NANOS) {
                return null;
            }
            TermIndex last = getRaftLog().getLastEntryTermIndex();
            if (last == null) {
                return null;
            }
            loadNoticeAt = now;
            return TermIndex.valueOf(last.getTerm(), last.getIndex() + 1);
        }

        /** Ratis calls this for each INCONSISTENCY answer (and only then); it notes the answer for {@link #loading}. */
        @Override
        protected long getNextIndexForInconsistency(long requestFirstIndex, long replyNextIndex) {
            answers.answered(replyNextIndex, getFollower().getMatchIndex(), System.nanoTime());
            return super.getNextIndexForInconsistency(requestFirstIndex, replyNextIndex);
        }

        @Override
        public TermIndex shouldNotifyToInstallSnapshot() {
            FollowerInfo follower = getFollower();
            long next = follower.getNextIndex();
            if (follower.hasAttemptedToInstallSnapshot() && next == follower.getSnapshotIndex() + 1
                    && next == getRaftLog().getStartIndex() && getPrevious(next) == null) {
                return null;
            }
            TermIndex load = loading();
            if (load != null) {
                // Before a notice at this leader's first entry: a replica whose install began at a later first entry
                // (another leader's, purged further) refuses that one ("not eligible"), again and again.
                return load;
            }
            long start = getRaftLog().getStartIndex();
            if (notified && !follower.hasAttemptedToInstallSnapshot() && follower.getSnapshotIndex() + 1 < start
                    && follower.getMatchIndex() + 1 < start) {
                // A replica told to install a snapshot loads what it installed only on the next notice, and until
                // then answers every append with its own next index. When its log runs past this leader's start
                // (the tail of a leader of an earlier term), this leader takes that index as where to go on, never
                // notifies it again, and both wait for good (Ratis 3.3.0). A replica notified that has answered
                // only "in progress" so far, and whose snapshot and log do not reach this leader's first entry, is
                // notified again (any other answer marks the attempt made).
                TermIndex first = getRaftLog().getTermIndex(start);
                if (first != null) {
                    return first;
                }
            }
            TermIndex notice = super.shouldNotifyToInstallSnapshot();
            notified |= notice != null;
            return notice;
        }
    }
}
