package io.sluice.cli;

import io.sluice.store.FlushMode;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.WarmUp;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;

/** Options shared by commands that open a store. */
final class StoreOptions {

    @Option(names = "--dir", required = true, description = "Store directory.")
    Path dir;

    @Option(names = "--flush", defaultValue = "async", converter = FlushConverter.class,
            description = "sync (ack after fsync, group commit) or async (default).")
    FlushMode flush;

    @Option(names = "--write-path", defaultValue = "mmap", converter = WritePathConverter.class,
            description = "mmap (default), write-buffer, channel or direct.")
    WritePath writePath;

    @Option(names = "--allocation", converter = AllocationConverter.class,
            description = "How new segments reserve blocks: fallocate (default) or zero-fill.")
    SegmentAllocation allocation;

    @Option(names = "--segment-size", description = "Segment file size in bytes for a new store (default 1 GiB);"
            + " below 16 MiB, messages are limited to a quarter of it.")
    Long segmentSize;

    @Option(names = "--retention-hours", description = "Delete segments whose messages are all older (default 72).")
    Long retentionHours;

    @Option(names = "--retention-bytes", description = "Delete the oldest segments while the log is larger.")
    Long retentionBytes;

    @Option(names = "--pre-touch", description = "Fault new MMAP segments in ahead of use: none (default), read or"
            + " write.")
    String preTouch;

    @Option(names = "--cache-bytes", description = "Read cache of the write-buffer and direct paths, in bytes"
            + " (default 256 MiB; 0 for none).")
    Long cacheBytes;

    @Option(names = "--lock-active", description = "mlock the active segment.")
    boolean lockActive;

    @Option(names = "--writeback-distance", description = "ASYNC page-cache paths: start writeback this many bytes"
            + " behind the writer (sync_file_range); 0 is off (default: 8 MiB on mmap, off elsewhere).")
    Long writebackDistance;

    StoreConfig config() {
        RetentionPolicy retention = RetentionPolicy.defaults();
        if (retentionHours != null) {
            retention = retention.withRetentionHours(retentionHours);
        }
        if (retentionBytes != null) {
            retention = retention.withRetentionBytes(retentionBytes);
        }
        StoreConfig.Builder builder = StoreConfig.builder().flushMode(flush).writePath(writePath).retention(retention);
        WarmUp.PreTouch touch = WarmUp.defaults().preTouch();
        if (preTouch != null) {
            try {
                touch = WarmUp.PreTouch.valueOf(preTouch.toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--pre-touch must be none, read or write, was " + preTouch);
            }
        }
        builder.warmUp(new WarmUp(touch, WarmUp.defaults().adviseReads(), lockActive));
        if (cacheBytes != null) {
            builder.cacheBytes(cacheBytes);
        }
        if (writebackDistance != null) {
            builder.writebackDistanceBytes(writebackDistance);
        }
        if (segmentSize != null) {
            builder.segmentSizeBytes(segmentSize);
            if (segmentSize < 16L << 20) {
                builder.maxMessageBytes((int) Math.max(1, segmentSize / 4));
            }
        }
        if (allocation != null) {
            builder.segmentAllocation(allocation);
        }
        return builder.build();
    }

    /** Accepts sync / async in any case. */
    static final class FlushConverter implements ITypeConverter<FlushMode> {
        @Override
        public FlushMode convert(String value) {
            return FlushMode.valueOf(value.toUpperCase(Locale.ROOT));
        }
    }

    /** Accepts fallocate / zero-fill in any case. */
    static final class AllocationConverter implements ITypeConverter<SegmentAllocation> {
        @Override
        public SegmentAllocation convert(String value) {
            return SegmentAllocation.valueOf(value.toUpperCase(Locale.ROOT).replace('-', '_'));
        }
    }

    /** Accepts mmap / write-buffer / channel / direct in any case. */
    static final class WritePathConverter implements ITypeConverter<WritePath> {
        @Override
        public WritePath convert(String value) {
            return WritePath.valueOf(value.toUpperCase(Locale.ROOT).replace('-', '_'));
        }
    }
}
