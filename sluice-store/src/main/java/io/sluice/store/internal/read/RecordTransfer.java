package io.sluice.store.internal.read;

import io.sluice.store.ReadResult;
import io.sluice.store.TransferResult;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.Segment;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;

/**
 * Walks a queue's index and sends its records to a channel, joining records that sit next to each other in
 * one segment's file into one {@code sendfile} call.
 */
final class RecordTransfer {

    private RecordTransfer() {
    }

    static TransferResult run(QueueIndex.Cursor cursor, CommitLog log, long fromOffset, long end, long maxBytes,
                              WritableByteChannel target) throws IOException {
        long offset = fromOffset;
        long sent = 0;
        int records = 0;
        long rangeStart = -1;
        long rangeEnd = -1;
        Segment rangeSegment = null;
        while (offset < end) {
            IndexEntry entry = cursor.entry(offset);
            long position = entry.logPosition();
            int size = entry.recordSize();
            if (records > 0 && sent + size > maxBytes) {
                break;
            }
            boolean inFile = position + size <= log.committedPosition();
            Segment segment = inFile ? log.segmentFor(position) : null;
            if (rangeStart >= 0 && (!inFile || position != rangeEnd || segment != rangeSegment)) {
                log.transfer(rangeStart, rangeEnd - rangeStart, target);
                rangeStart = -1;
            }
            if (inFile && segment != null) {
                if (rangeStart < 0) {
                    rangeStart = position;
                    rangeSegment = segment;
                }
                rangeEnd = position + size;
            } else {
                log.transfer(position, size, target);
            }
            sent += size;
            records++;
            offset = offset - entry.indexInRecord() + entry.messageCount();
        }
        if (rangeStart >= 0) {
            log.transfer(rangeStart, rangeEnd - rangeStart, target);
        }
        return new TransferResult(ReadResult.Status.FOUND, offset, sent, records);
    }
}
