package io.sluice.cluster;

import io.sluice.store.KafkaBatch;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientRequest;

/**
 * A leader's replica: the batches its node submitted, by call id, from the submit until this replica stored them (or
 * refused them). The transaction Ratis starts for such a request carries them as its context, so the entry is neither
 * parsed nor checked again on its way into the log and this replica's store.
 */
final class Submissions {

    /**
     * An entry's batches as its client submitted them, the context of its transaction.
     *
     * @param client who submitted them
     * @param batches the checked batches, one after the other as in the entry, when this node submitted them (their
     *     CRC32C was computed as the broker took them, and is not again); null for a request from elsewhere
     * @param stored completes with the first batch's base offset once this replica stored them all (acks=1)
     */
    record Submission(ClientId client, List<KafkaBatch> batches, CompletableFuture<Long> stored) {
    }

    private final Map<Long, Submission> submitted = new ConcurrentHashMap<>();

    /**
     * The batches a request of this node will submit with {@code callId}, checked by the broker that took them.
     *
     * @param batches the batches, one after the other as the request's message holds them
     * @return completes with the first batch's base offset once this replica stored them
     */
    CompletableFuture<Long> submitting(long callId, ClientId client, List<KafkaBatch> batches) {
        Submission submission = new Submission(client, batches, new CompletableFuture<>());
        submitted.put(callId, submission);
        submission.stored().whenComplete((offset, failure) -> submitted.remove(callId, submission));
        return submission.stored();
    }

    /**
     * @return what this node submitted with the request's call id and client, or a submission of batches unknown here
     *     (a request from another client), which are checked as the entry is made
     */
    Submission of(RaftClientRequest request) {
        Submission own = submitted.get(request.getCallId());
        return own != null && own.client().equals(request.getClientId()) ? own
                : new Submission(request.getClientId(), null, new CompletableFuture<>());
    }
}
