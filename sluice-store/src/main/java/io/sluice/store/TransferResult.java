package io.sluice.store;

/**
 * What {@link Store#transferTo} sent.
 *
 * @param status {@link ReadResult.Status#FOUND} if records were sent, else why none were
 * @param nextOffset the offset to continue from: after the last message of the last record sent, or where
 *     the queue starts or ends when nothing was sent
 * @param bytes bytes sent
 * @param records records sent (a batch record carries several messages)
 */
public record TransferResult(ReadResult.Status status, long nextOffset, long bytes, int records) {
}
