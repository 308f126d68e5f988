package io.sluice.store.internal.log;

import io.sluice.store.CacheStats;
import io.sluice.store.internal.cache.Pin;
import io.sluice.store.internal.cache.ReadCache;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit log's read paths: views of log bytes from a write-buffer page, a read-cache page, a segment's
 * mapping or a positional read into a lent buffer, and transfers of log bytes to a channel ({@code sendfile}
 * from the file, or a write from buffered memory). Every view holds what it points into ({@link Pin}) until
 * it is closed. Thread-safe; for anyone.
 */
final class LogViews implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LogViews.class);

    private final CommitLog log;
    private final SegmentWriter writer;
    /** The tail-aware read cache (WRITE_BUFFER and DIRECT, when configured), or null. */
    private final ReadCache cache;
    private final boolean buffered;
    /** DIRECT only: data is not in the page cache, so a cache miss loads the page from the file. */
    private final boolean loadsOnMiss;
    private final long mappedReadMaxBytes;
    private final ReadBuffers readBuffers = new ReadBuffers();

    /**
     * @param log the log read
     * @param writer its writer (a write-buffer page holds bytes not yet in the file)
     * @param cache its read cache, or null
     * @param buffered the write path buffers appends (WRITE_BUFFER, DIRECT)
     * @param loadsOnMiss a cache miss loads the page from the file (DIRECT)
     * @param mappedReadMaxBytes reads larger than this go positionally even where the segment is mapped
     */
    LogViews(CommitLog log, SegmentWriter writer, ReadCache cache, boolean buffered, boolean loadsOnMiss,
             long mappedReadMaxBytes) {
        this.log = log;
        this.writer = writer;
        this.cache = cache;
        this.buffered = buffered;
        this.loadsOnMiss = loadsOnMiss;
        this.mappedReadMaxBytes = mappedReadMaxBytes;
    }

    /**
     * A view of the bytes [position, position + length): pinned write-buffer memory if they are only in a
     * buffer, else the segment's mapping. The caller must stay below the position it is allowed to read.
     *
     * @return the view; close it when done
     */
    public RecordView read(long position, int length) {
        if (buffered) {
            WriteBufferPool.Pinned pinned = writer.pin(position, length);
            if (pinned != null) {
                if (cache != null) {
                    cache.countWriteBufferHit();
                }
                return new RecordView(pinned.bytes(), pinned);
            }
        }
        if (cache != null) {
            RecordView cached = readCached(position, length);
            if (cached != null) {
                return cached;
            }
        }
        Segment segment = log.segmentFor(position);
        if (segment == null || !segment.tryRetain()) {
            if (segment != null || position < log.minPosition()) {
                throw new SegmentRetiredException(position);
            }
            throw new IllegalArgumentException("log position " + position + " is not stored");
        }
        MemorySegment mapping = length <= mappedReadMaxBytes ? segment.pinMapping() : null;
        if (mapping != null) {
            return new RecordView(mapping.asSlice(position - segment.base(), length).asReadOnly(),
                    segment.mappedViewPin());
        }
        try {
            return readPositional(segment, position, length);
        } finally {
            segment.release();
        }
    }

    /** Reads [position, position + length) of a held segment's file into a lent direct buffer. */
    private RecordView readPositional(Segment segment, long position, int length) {
        ReadBuffers.Buffer buffer = readBuffers.take(length);
        try {
            MemorySegment bytes = buffer.memory().asSlice(0, length);
            ByteBuffer target = bytes.asByteBuffer();
            while (target.hasRemaining()) {
                if (segment.file().read(target, position - segment.base() + target.position()) < 0) {
                    throw new IOException("segment " + segment + " ends before log position " + (position + length));
                }
            }
            return new RecordView(bytes.asReadOnly(), buffer);
        } catch (IOException e) {
            buffer.release();
            throw new UncheckedIOException("reading log position " + position + " failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            buffer.release();
            throw e;
        }
    }

    /** The read cache's answer: a hit, or on DIRECT a page loaded now; null to read through the mapping. */
    private RecordView readCached(long position, int length) {
        long committed = log.committedPosition();
        ReadCache.Hit hit = cache.read(position, length, loadsOnMiss ? this::loadFromFile : null, committed);
        if (hit == null) {
            cache.countMiss();
            if (loadsOnMiss && position + length <= committed) {
                Segment segment = log.segmentFor(position);
                if (segment != null) {
                    try {
                        hit = cache.load(position, length, Math.min(segment.end(), committed), this::loadFromFile);
                    } catch (IOException e) {
                        LOG.warn("loading log position {} into the read cache failed ({}); reading it through the"
                                + " mapping", position, e.toString());
                    }
                }
            }
        }
        return hit == null ? null : new RecordView(hit.bytes().asReadOnly(), hit.pin());
    }

    /** Reads log bytes from the segment files (a range may cross segments) into {@code target}. */
    private void loadFromFile(long position, MemorySegment target) throws IOException {
        long at = position;
        long end = position + target.byteSize();
        while (at < end) {
            Segment segment = log.segmentFor(at);
            if (segment == null || !segment.tryRetain()) {
                throw new SegmentRetiredException(at);
            }
            try {
                long n = Math.min(end, segment.end()) - at;
                ByteBuffer buffer = target.asSlice(at - position, n).asByteBuffer();
                while (buffer.hasRemaining()) {
                    if (segment.file().read(buffer, at - segment.base() + buffer.position()) < 0) {
                        throw new IOException("segment " + segment + " ends before log position " + end);
                    }
                }
                at += n;
            } finally {
                segment.release();
            }
        }
    }

    /** @return the read cache's counters, or null without a cache */
    public CacheStats cacheStats() {
        return cache == null ? null : cache.stats();
    }

    /**
     * Sends the log bytes [position, position + length) to {@code target}: bytes in a write-buffer page or a
     * read-cache page are written from that page (direct memory, no copy); bytes in the file go by {@code sendfile}
     * ({@link io.sluice.store.io.StoreFile#transferTo}). The range must lie in one segment and, if any of it
     * is only buffered, in one record.
     *
     * @throws SegmentRetiredException if retention deleted the segment
     * @throws IOException if writing to {@code target} or reading the file failed
     */
    public void transfer(long position, long length, WritableByteChannel target) throws IOException {
        transfer(position, length, target, null);
    }

    /**
     * {@link #transfer(long, long, WritableByteChannel)} from the segment {@code chosen} (when not null): the bytes a
     * reader chose there, sent from that segment's file even if compaction replaced it since. A write-buffer page
     * holds only the active segment's bytes, which compaction never takes; a cache page of a replaced range is either
     * gone or holds the bytes chosen.
     */
    public void transfer(long position, long length, WritableByteChannel target, Segment chosen) throws IOException {
        if (buffered && length <= Integer.MAX_VALUE) {
            Pin pin = null;
            MemorySegment bytes = null;
            WriteBufferPool.Pinned pinned = writer.pin(position, length);
            if (pinned != null) {
                pin = pinned;
                bytes = pinned.bytes();
            } else if (cache != null) {
                ReadCache.Hit hit = cache.read(position, (int) length, null, log.committedPosition());
                if (hit != null && chosen != null && chosen.isAbandoned()) {
                    // The chosen segment was replaced: a page now may hold the copy's bytes. Its file is sure.
                    hit.pin().release();
                    hit = null;
                }
                if (hit != null) {
                    pin = hit.pin();
                    bytes = hit.bytes();
                }
            }
            if (pin != null) {
                try {
                    ByteBuffer buffer = bytes.asByteBuffer();
                    while (buffer.hasRemaining()) {
                        target.write(buffer);
                    }
                    return;
                } finally {
                    pin.release();
                }
            }
        }
        Segment segment = chosen != null ? chosen : log.segmentFor(position);
        if (segment == null || !segment.tryRetain()) {
            throw new SegmentRetiredException(position);
        }
        try {
            if (target instanceof io.sluice.store.FillableChannel fillable) {
                fill(segment, position - segment.base(), length, fillable);
            } else {
                segment.file().transferTo(position - segment.base(), length, target);
            }
        } finally {
            segment.release();
        }
    }

    /** Reads [offset, offset + length) of the segment's file straight into the target's buffer. */
    private static void fill(Segment segment, long offset, long length, io.sluice.store.FillableChannel target)
            throws IOException {
        long at = offset;
        long end = offset + length;
        while (at < end) {
            ByteBuffer room = target.room();
            int limit = room.limit();
            room.limit((int) Math.min(limit, room.position() + (end - at)));
            try {
                while (room.hasRemaining()) {
                    int n = segment.file().read(room, at);
                    if (n < 0) {
                        throw new java.io.EOFException("segment " + segment.base() + " ends before " + end);
                    }
                    at += n;
                }
            } finally {
                room.limit(limit);
            }
        }
    }

    /** Frees the pooled read buffers; call after every reader is done. */
    @Override
    public void close() {
        readBuffers.close();
    }
}
