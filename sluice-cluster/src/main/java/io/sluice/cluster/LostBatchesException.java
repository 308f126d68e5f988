package io.sluice.cluster;

/**
 * A replica's store lacks batches its Raft log names: the log claims entries whose batches are gone (a power cut
 * under ASYNC, whose store forces less often than Ratis its log), and the replica can be neither a follower that
 * appends after them nor a leader that serves them. The node takes it out of its group and rebuilds it from the other
 * replicas, or, where they cannot elect a leader without it, cuts its log back to what its store holds
 * ({@link ShortReplicas}).
 */
final class LostBatchesException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /** Why a replica's store lacks batches its log names, and what becomes of it: the end of each such message. */
    static final String WHY = "this replica lost batches (a power cut under ASYNC, whose store forces less often"
            + " than Ratis its log); it is rebuilt from the other replicas, or, where they cannot elect a leader"
            + " without it, its log is cut back to what its store holds";

    /** @param message what the store lacks */
    LostBatchesException(String message) {
        super(message);
    }
}
