package io.sluice.bench.race;

/**
 * What an acknowledgement promises. SYNC: the message is on disk (forced) before the producer hears back.
 * ASYNC: it is in the store (page cache or the store's buffers) and is forced in the background.
 */
public enum Durability {
    /** Acknowledged after a force; producers send one message and wait. */
    SYNC,
    /** Acknowledged once appended; producers send batches. */
    ASYNC
}
