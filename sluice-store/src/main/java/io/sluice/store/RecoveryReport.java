package io.sluice.store;

import java.util.List;

/**
 * What recovery found and did to one log when the store opened, or, from {@link Store#planRecovery}, what it
 * would do.
 *
 * @param mode how the log opened (or would open)
 * @param durablePosition the checkpoint's durable position for the log: everything below it was forced; -1 if the
 *     store has no checkpoint
 * @param scanFrom where record validation started, or -1 if nothing was scanned
 * @param end where the log ends (after recovery)
 * @param records records validated and indexed
 * @param cutAt where the log was (or would be) cut: the first record that failed validation, or -1
 * @param bytesDropped bytes past the cut that were (or would be) erased or deleted
 * @param segmentsDropped segment files past the cut that were (or would be) deleted
 * @param dropped a plan only: the valid records past the cut, by queue ("topic-queue: offsets a..b (n messages
 *     in m records)")
 * @param problem a plan only: why a plain open would refuse the log (corruption below the durable position), or
 *     null
 */
public record RecoveryReport(Mode mode, long durablePosition, long scanFrom, long end, long records, long cutAt,
                             long bytesDropped, int segmentsDropped, List<String> dropped, String problem) {

    /** Copies the list. */
    public RecoveryReport {
        dropped = List.copyOf(dropped);
    }

    /** How a log opened. */
    public enum Mode {
        /** Clean shutdown: nothing read, nothing changed. */
        CLEAN,
        /** After a crash: records from the scan start validated and indexed. */
        CRASH,
        /** Every index rebuilt from the log's first segment. */
        REBUILD,
        /** Read-only after a crash: shown up to the durable position, nothing changed. */
        READ_ONLY_TO_DURABLE
    }
}
