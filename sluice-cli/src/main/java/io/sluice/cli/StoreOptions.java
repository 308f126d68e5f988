package io.sluice.cli;

import io.sluice.store.FlushMode;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.TopicLayout;
import io.sluice.store.WarmUp;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.cluster.ClusterBroker;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.Option;

/** Options shared by commands that open a store. */
final class StoreOptions {

    @Option(names = "--dir", required = true, description = "Store directory.")
    Path dir;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /**
     * Refuses a cluster broker's store (exit 2): its replicated partitions' batches are those its Raft logs name,
     * and {@code change} would change them under the logs. The broker does it itself (retention holding what the
     * logs name, appends through Raft).
     */
    void refuseClusterStore(String change) throws IOException {
        Optional<String> node = ClusterBroker.nodeOwning(dir);
        if (node.isPresent()) {
            throw new ParameterException(command.commandLine(), dir + " is the store of cluster broker " + node.get()
                    + ": its partitions' batches are the ones its Raft logs name, and " + change + " would change"
                    + " them under the logs. Its broker does that itself: start it (with --cluster) instead.");
        }
    }

    @Option(names = "--flush", defaultValue = "async", converter = FlushConverter.class,
            description = "sync (ack after fsync, group commit) or async (default).")
    FlushMode flush;

    @Option(names = "--write-path", converter = WritePathConverter.class,
            description = "mmap, write-buffer, channel or direct (default: mmap; channel for a broker under async).")
    WritePath writePath;

    @Option(names = "--allocation", converter = AllocationConverter.class,
            description = "How new segments reserve blocks: fallocate or zero-fill (default: zero-fill under "
                    + "sync except on mmap, fallocate otherwise).")
    SegmentAllocation allocation;

    @Option(names = "--segment-size", description = "Segment file size in bytes (default 1 GiB); below 16 MiB, messages"
            + " are limited to a quarter of it. A store setting: given, it replaces the store's.")
    Long segmentSize;

    @Option(names = "--max-message-bytes", description = "The largest message the store takes, in bytes: for a"
            + " broker, the largest record batch, which caps every topic's max.message.bytes (default 4 MiB; with"
            + " --segment-size below 16 MiB, a quarter of it). At most the segment size less a record's overhead.")
    Integer maxMessageBytes;

    @Option(names = "--retention-hours", description = "Delete segments whose messages are all older (default 72)."
            + " A store setting: given, it replaces the store's; not given, the store keeps its own.")
    Long retentionHours;

    @Option(names = "--retention-bytes", description = "Delete the oldest segments while the log is larger. A store"
            + " setting: given, it replaces the store's.")
    Long retentionBytes;

    @Option(names = "--pre-touch", converter = PreTouchConverter.class, description = "Fault new MMAP segments in"
            + " ahead of use: none (default), read or write.")
    WarmUp.PreTouch preTouch;

    @Option(names = "--cache-bytes", description = "Read cache of the write-buffer and direct paths, in bytes"
            + " (default 256 MiB; 0 for none).")
    Long cacheBytes;

    @Option(names = "--lock-active", description = "mlock the active segment.")
    boolean lockActive;

    @Option(names = "--writeback-distance", description = "ASYNC page-cache paths: start writeback this many bytes"
            + " behind the writer (sync_file_range); 0 is off (default: 8 MiB on mmap, off elsewhere).")
    Long writebackDistance;

    @Option(names = "--max-open-logs", description = "Logs of their own (a topic's partitions) open at once; idle"
            + " ones close and open again on use (default 0: a quarter of the descriptor limit, 16 to 4096).")
    Integer maxOpenLogs;

    @Option(names = "--force-together", negatable = true, defaultValue = "false", fallbackValue = "true",
            description = "When several logs must be forced at once (SYNC appends waiting, a checkpoint), make them"
                    + " durable with one sync of the file system (syncfs) instead of a force per log (default: off;"
                    + " for a file system the store has to itself: a sync of it writes other programs' dirty pages"
                    + " too).")
    boolean forceTogether;

    StoreConfig config() {
        return config(WritePath.MMAP);
    }

    /** @param defaultWritePath the write path when {@code --write-path} is not given */
    StoreConfig config(WritePath defaultWritePath) {
        if (writePath == null) {
            writePath = defaultWritePath;
        }
        RetentionPolicy retention = RetentionPolicy.defaults();
        if (retentionHours != null) {
            retention = retention.withRetentionHours(retentionHours);
        }
        if (retentionBytes != null) {
            retention = retention.withRetentionBytes(retentionBytes);
        }
        StoreConfig.Builder builder = StoreConfig.builder().flushMode(flush).writePath(writePath).retention(retention);
        builder.warmUp(new WarmUp(preTouch != null ? preTouch : WarmUp.defaults().preTouch(),
                WarmUp.defaults().adviseReads(), lockActive));
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
        if (maxMessageBytes != null) {
            builder.maxMessageBytes(maxMessageBytes);
        }
        if (allocation != null) {
            builder.segmentAllocation(allocation);
        }
        if (maxOpenLogs != null) {
            builder.maxOpenLogs(maxOpenLogs);
        }
        builder.forceTogether(forceTogether);
        // Segment size and retention belong to the store: an existing store keeps its own unless the user gave
        // them here (a new store saves whatever this configuration says, defaults included).
        builder.overrideStoreSettings(segmentSize != null || retentionHours != null || retentionBytes != null);
        return builder.build();
    }

    /** Accepts an enum constant's name in any case, with '-' for '_' (write-buffer, zero-fill). */
    abstract static class NameConverter<E extends Enum<E>> implements ITypeConverter<E> {
        private final Class<E> type;

        NameConverter(Class<E> type) {
            this.type = type;
        }

        @Override
        public E convert(String value) {
            for (E constant : type.getEnumConstants()) {
                if (constant.name().equals(value.toUpperCase(Locale.ROOT).replace('-', '_'))) {
                    return constant;
                }
            }
            List<String> names = new ArrayList<>();
            for (E constant : type.getEnumConstants()) {
                names.add(constant.name().toLowerCase(Locale.ROOT).replace('_', '-'));
            }
            throw new TypeConversionException("expected one of " + String.join(", ", names) + ", was '" + value + "'");
        }
    }

    /** sync / async. */
    static final class FlushConverter extends NameConverter<FlushMode> {
        FlushConverter() {
            super(FlushMode.class);
        }
    }

    /** fallocate / zero-fill. */
    static final class AllocationConverter extends NameConverter<SegmentAllocation> {
        AllocationConverter() {
            super(SegmentAllocation.class);
        }
    }

    /** mmap / write-buffer / channel / direct. */
    static final class WritePathConverter extends NameConverter<WritePath> {
        WritePathConverter() {
            super(WritePath.class);
        }
    }

    /** none / read / write. */
    static final class PreTouchConverter extends NameConverter<WarmUp.PreTouch> {
        PreTouchConverter() {
            super(WarmUp.PreTouch.class);
        }
    }

    /** shared / topic / queue. */
    static final class LayoutConverter extends NameConverter<TopicLayout> {
        LayoutConverter() {
            super(TopicLayout.class);
        }

        @Override
        public TopicLayout convert(String value) {
            TopicLayout layout = super.convert(value);
            if (layout == TopicLayout.BATCHES) {
                // produce and perf append messages; a BATCHES topic takes Kafka record batches (the broker's).
                throw new TypeConversionException("batches holds Kafka record batches only, not messages: expected"
                        + " shared, topic or queue");
            }
            return layout;
        }
    }
}
