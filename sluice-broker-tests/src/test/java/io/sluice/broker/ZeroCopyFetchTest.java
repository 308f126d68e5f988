package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fetched record bytes leave the store by {@code transferTo} to the client's socket (the JDK's {@code sendfile}
 * path), never by a read into memory: a counting file seam under the store sees every byte the broker takes from
 * segment files.
 */
class ZeroCopyFetchTest {

    @TempDir
    Path dir;

    /** Counts bytes read from files and bytes transferred, and the kinds of channel transfers went to. */
    static final class CountingFileIO implements FileIO {
        final AtomicLong readBytes = new AtomicLong();
        final AtomicLong transferredBytes = new AtomicLong();
        final Set<Class<?>> targets = ConcurrentHashMap.newKeySet();
        /** When set, the disk space reported instead of the file system's. */
        volatile DiskSpace reported;
        /** When set, every force of a store file waits until it opens. */
        volatile CountDownLatch forceGate;
        private final FileIO delegate = FileIO.DEFAULT;

        @Override
        public StoreFile open(Path path, OpenMode mode) throws IOException {
            StoreFile file = delegate.open(path, mode);
            return new StoreFile() {
                @Override public Path path() { return file.path(); }
                @Override public long size() throws IOException { return file.size(); }
                @Override public void allocate(long size, boolean zeroFill) throws IOException { file.allocate(size, zeroFill); }
                @Override public void writeFully(ByteBuffer source, long position) throws IOException { file.writeFully(source, position); }
                @Override public void writeDirect(MemorySegment source, long position) throws IOException { file.writeDirect(source, position); }
                @Override public int read(ByteBuffer target, long position) throws IOException {
                    int read = file.read(target, position);
                    if (read > 0 && HookedPaths.isSegment(path)) {
                        readBytes.addAndGet(read);
                    }
                    return read;
                }
                @Override public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
                    targets.add(target.getClass());
                    file.transferTo(position, count, target);
                    transferredBytes.addAndGet(count);
                }
                @Override public boolean startWriteback(long offset, long length) throws IOException { return file.startWriteback(offset, length); }
                @Override public void force() throws IOException {
                    CountDownLatch gate = forceGate;
                    if (gate != null) {
                        try {
                            if (!gate.await(30, TimeUnit.SECONDS)) {
                                throw new IOException("force gate never opened");
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IOException("interrupted at the force gate", e);
                        }
                    }
                    file.force();
                }
                @Override public void zeroRange(long offset, long length) throws IOException { file.zeroRange(offset, length); }
                @Override public long nextData(long offset) throws IOException { return file.nextData(offset); }
                @Override public MemorySegment map(FileChannel.MapMode mapMode, long offset, long size, Arena arena) throws IOException {
                    return file.map(mapMode, offset, size, arena);
                }
                @Override public void truncate(long size) throws IOException { file.truncate(size); }
                @Override public void close() throws IOException { file.close(); }
            };
        }

        @Override public void syncDirectory(Path directory) throws IOException { delegate.syncDirectory(directory); }
        @Override public boolean syncFileSystem(Path path) throws IOException { return delegate.syncFileSystem(path); }
        @Override public DiskSpace diskSpace(Path path) throws IOException {
            DiskSpace fixed = reported;
            return fixed != null ? fixed : delegate.diskSpace(path);
        }
        @Override public boolean exists(Path path) throws IOException { return delegate.exists(path); }
        @Override public boolean isDirectory(Path path) throws IOException { return delegate.isDirectory(path); }
        @Override public List<Path> list(Path directory) throws IOException { return delegate.list(directory); }
        @Override public boolean createDirectory(Path directory) throws IOException { return delegate.createDirectory(directory); }
        @Override public boolean delete(Path path) throws IOException { return delegate.delete(path); }
        @Override public void rename(Path source, Path target) throws IOException { delegate.rename(source, target); }
        @Override public Closeable tryLock(Path path) throws IOException { return delegate.tryLock(path); }
    }

    /** Segment files are named by 20 digits in a {@code log} directory. */
    static final class HookedPaths {
        static boolean isSegment(Path path) {
            Path parent = path.getParent();
            return parent != null && parent.getFileName().toString().equals("log")
                    && path.getFileName().toString().matches("\\d{20}");
        }
    }

    @Test
    void fetchedBatchesGoFromTheSegmentFilesToTheSocketByTransferAndAreNeverRead() throws Exception {
        CountingFileIO io = new CountingFileIO();
        int records = 5_000;
        long valueBytes = 0;
        try (Store store = Store.open(dir, StoreConfig.builder().writePath(WritePath.MMAP).flushMode(FlushMode.ASYNC)
                .fileIO(io).build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "zc", 1);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(ProduceFetchTest.producerConfig(broker,
                    "1", "none"), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < records; i++) {
                    byte[] value = ProduceFetchTest.value(0, i);
                    valueBytes += value.length;
                    producer.send(new ProducerRecord<>("zc", 0, null, value));
                }
                producer.flush();
            }
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> received = ProduceFetchTest.consumeAll(broker, "zc", 1,
                    records);
            assertThat(received.get(0)).hasSize(records);
            assertThat(io.transferredBytes.get()).as("every fetched byte was transferred").isGreaterThan(valueBytes);
            assertThat(io.readBytes.get()).as("no segment bytes were read into memory").isZero();
            assertThat(io.targets).as("transfers went to the socket itself, where the JDK uses sendfile")
                    .allMatch(SocketChannel.class::isAssignableFrom);
        }
    }
}
