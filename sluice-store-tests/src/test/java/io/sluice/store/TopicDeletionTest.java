package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Deleting a topic with a log of its own: its messages, files, declared count and consumer positions go for good,
 * other topics are untouched, and a topic created again under the same name starts empty, before and after a
 * reopen.
 */
@ExtendWith(NoLeaks.class)
class TopicDeletionTest {

    @TempDir
    Path dir;

    private StoreConfig config(FlushMode mode) {
        return TestStores.small(WritePath.MMAP, mode).maxQueuesPerTopic(64).build();
    }

    private static Message message(String text) {
        return Message.of(text.getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> bodies(Store store, String topic, int queue) {
        List<String> bodies = new ArrayList<>();
        try (ReadResult read = store.read(topic, queue, store.minOffset(topic, queue), 1000, 1 << 20)) {
            read.messages().forEach(m -> bodies.add(new String(m.bodyBytes(), StandardCharsets.UTF_8)));
        }
        return bodies;
    }

    @ParameterizedTest
    @EnumSource(value = TopicLayout.class, names = {"TOPIC", "QUEUE"})
    void aDeletedTopicLeavesNothingAndComesBackEmpty(TopicLayout layout) throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            store.createTopic("gone", layout, 3);
            store.createTopic("kept", layout, 2);
            for (int q = 0; q < 3; q++) {
                for (int i = 0; i < 20; i++) {
                    store.append("gone", q, message("gone-" + q + "-" + i)).join();
                }
            }
            store.append("kept", 1, message("kept-0")).join();
            store.append("shared", 0, message("shared-0")).join();
            store.commitOffset("g", "gone", 1, 5);
            store.commitOffset("g", "kept", 1, 1);

            assertThat(store.deleteTopic("gone")).isTrue();

            assertThat(store.queueCount("gone")).isZero();
            assertThat(store.layout("gone")).isEqualTo(TopicLayout.SHARED);
            assertThat(store.topics()).doesNotContain("gone");
            assertThat(store.declaredTopics()).doesNotContainKey("gone");
            assertThat(store.queues("gone")).isEmpty();
            assertThat(store.committedOffset("g", "gone", 1)).isEmpty();
            assertThat(store.committedOffset("g", "kept", 1)).hasValue(1);
            assertThat(store.maxOffset("gone", 0)).isZero();
            assertThat(Files.exists(dir.resolve("logs").resolve("gone"))).isFalse();
            assertThat(bodies(store, "kept", 1)).containsExactly("kept-0");
            assertThat(store.deleteTopic("gone")).as("a second deletion finds nothing").isFalse();

            // Created again at once: empty, offsets from 0.
            store.createTopic("gone", layout, 2);
            assertThat(store.append("gone", 1, message("again")).join().firstQueueOffset()).isZero();
        }
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            assertThat(store.openedClean()).isTrue();
            assertThat(store.queueCount("gone")).isEqualTo(2);
            assertThat(bodies(store, "gone", 1)).containsExactly("again");
            assertThat(store.maxOffset("gone", 0)).isZero();
            assertThat(bodies(store, "kept", 1)).containsExactly("kept-0");
            assertThat(bodies(store, "shared", 0)).containsExactly("shared-0");
            assertThat(store.committedOffset("g", "kept", 1)).hasValue(1);
            assertThat(store.committedOffset("g", "gone", 1)).isEmpty();
        }
    }

    @Test
    void aTopicDeletedThenCreatedAgainInAnotherSessionOpensWithOnlyItsNewMessages() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            store.createTopic("t", TopicLayout.QUEUE, 1);
            for (int i = 0; i < 100; i++) {
                store.append("t", 0, message("old-" + i));
            }
        }
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            assertThat(store.deleteTopic("t")).isTrue();
        }
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            assertThat(store.queueCount("t")).isZero();
            store.createTopic("t", TopicLayout.QUEUE, 1);
            store.append("t", 0, message("new-0")).join();
        }
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            assertThat(store.openedClean()).isTrue();
            assertThat(bodies(store, "t", 0)).containsExactly("new-0");
        }
    }

    @Test
    void aSharedTopicIsRefusedAndAnUnknownOneIsNotFound() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            store.append("plain", 0, message("x")).join();
            store.createTopic("declared", TopicLayout.SHARED, 2);
            assertThatThrownBy(() -> store.deleteTopic("plain")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lives in the shared log");
            assertThatThrownBy(() -> store.deleteTopic("declared")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lives in the shared log");
            assertThat(store.deleteTopic("never")).isFalse();
            assertThatThrownBy(() -> store.deleteTopic("bad/name")).isInstanceOf(IllegalArgumentException.class);
            assertThat(bodies(store, "plain", 0)).containsExactly("x");
        }
        Store closed = Store.open(dir, config(FlushMode.SYNC));
        closed.close();
        assertThatThrownBy(() -> closed.deleteTopic("plain")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aDeclaredOnlyAppendNeverCreatesATopic() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            java.lang.foreign.MemorySegment batch = java.lang.foreign.MemorySegment.ofArray(new byte[64]);
            assertThat(store.appendOpaqueToDeclared("never", 0, batch, 1, Durability.FLUSH_MODE))
                    .failsWithin(java.time.Duration.ofSeconds(5)).withThrowableThat()
                    .withCauseInstanceOf(TopicDeletedException.class);
            store.createTopic("t", TopicLayout.QUEUE, 1);
            assertThat(store.appendOpaqueToDeclared("t", 0, batch, 2, Durability.FLUSH_MODE).join().messageCount()).isEqualTo(2);
            store.deleteTopic("t");
            assertThat(store.appendOpaqueToDeclared("t", 0, batch, 1, Durability.FLUSH_MODE))
                    .failsWithin(java.time.Duration.ofSeconds(5)).withThrowableThat()
                    .withCauseInstanceOf(TopicDeletedException.class);
            assertThat(store.topics()).doesNotContain("never", "t");
        }
    }

    /** Without a registry file nothing says which directories under {@code logs/} are orphans: none is removed. */
    @Test
    void logsAreLeftAloneWhenTheRegistryFileIsMissing() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            store.createTopic("t", TopicLayout.TOPIC, 1);
            store.append("t", 0, message("kept")).join();
        }
        Files.delete(dir.resolve("topics"));
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            assertThat(Files.exists(dir.resolve("logs").resolve("t"))).isTrue();
            assertThat(store.queueCount("t")).as("unknown without its registry").isZero();
        }
    }

    /**
     * Files under {@code logs/} of a topic the registry does not name (a deletion cut short by a crash) are removed
     * at open, and do not come back as a new topic's messages.
     */
    @Test
    void leftoverFilesOfAnUnregisteredTopicAreRemovedAtOpen() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            store.createTopic("t", TopicLayout.TOPIC, 1);
            store.append("t", 0, message("old")).join();
        }
        // What a crash after the registry was saved, before the files went, leaves: the files, no entry.
        Path saved = Files.createTempDirectory(dir.getParent(), "copy");
        copyTree(dir.resolve("logs").resolve("t"), saved.resolve("t"));
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            store.deleteTopic("t");
        }
        copyTree(saved.resolve("t"), dir.resolve("logs").resolve("t"));
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            assertThat(Files.exists(dir.resolve("logs").resolve("t"))).isFalse();
            assertThat(store.queueCount("t")).isZero();
            store.createTopic("t", TopicLayout.TOPIC, 1);
            assertThat(store.append("t", 0, message("new")).join().firstQueueOffset()).isZero();
            assertThat(bodies(store, "t", 0)).containsExactly("new");
        }
    }

    /**
     * Appends racing a deletion: each one either completes before it (and goes with the topic) or fails with
     * TopicDeletedException; none brings the topic's log back, and the other topic loses nothing.
     */
    @Test
    void appendsRacingADeletionFailCleanlyAndDoNotBringTheTopicBack() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            store.createTopic("gone", TopicLayout.QUEUE, 4);
            store.createTopic("kept", TopicLayout.QUEUE, 1);
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch started = new CountDownLatch(4);
            List<Thread> writers = new ArrayList<>();
            List<Throwable> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int q = 0; q < 4; q++) {
                int queue = q;
                writers.add(Thread.ofPlatform().start(() -> {
                    started.countDown();
                    while (!stop.get()) {
                        try {
                            CompletableFuture<AppendResult> result = store.append("gone", queue, message("x"));
                            result.join();
                        } catch (CompletionException e) {
                            if (e.getCause() instanceof TopicDeletedException) {
                                return; // the topic is gone
                            }
                            unexpected.add(e.getCause());
                            return;
                        } catch (RuntimeException e) {
                            unexpected.add(e);
                            return;
                        }
                    }
                }));
            }
            started.await();
            for (int i = 0; i < 50; i++) {
                store.append("kept", 0, message("kept-" + i)).join();
            }
            assertThat(store.deleteTopic("gone")).isTrue();
            Thread.sleep(50);
            stop.set(true);
            for (Thread writer : writers) {
                writer.join();
            }
            assertThat(unexpected).isEmpty();
            // A writer whose next append came after the deletion recreated "gone" in the shared log, as any append
            // to a new topic does; none of them may have brought back a log of its own.
            assertThat(store.layout("gone")).isEqualTo(TopicLayout.SHARED);
            assertThat(Files.exists(dir.resolve("logs").resolve("gone"))).isFalse();
            assertThat(store.maxOffset("kept", 0)).isEqualTo(50);
        }
    }

    /**
     * A reader still holding a segment that retention retired lets go after its topic was deleted and created again:
     * the file it held is gone with the old topic, and its release must not delete the new log's file of the same
     * name (both logs start at position 0).
     */
    @Test
    void aLateReleaseOfARetiredSegmentSparesTheRecreatedTopicsFiles() throws Exception {
        long segment = 64 * 1024;
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC)
                .segmentSizeBytes(segment)
                .retention(RetentionPolicy.defaults().withRetentionBytes(2 * segment)
                        .withCheckIntervalMillis(3_600_000))
                .build();
        Path firstSegment = dir.resolve("logs").resolve("t").resolve("log").resolve(String.format("%020d", 0));
        byte[] body = new byte[1000];
        try (Store store = Store.open(dir, config)) {
            store.createTopic("t", TopicLayout.TOPIC, 1);
            List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                appends.add(store.append("t", 0, Message.of(body)));
            }
            appends.forEach(CompletableFuture::join);
            ReadResult held = store.read("t", 0, 0, 10, 1 << 20);
            assertThat(held.messages()).hasSize(10);
            assertThat(store.enforceRetention().segmentsDeleted()).as("segment 0 retired while held").isPositive();
            assertThat(store.minOffset("t", 0)).isPositive();

            assertThat(store.deleteTopic("t")).isTrue();
            store.createTopic("t", TopicLayout.TOPIC, 1);
            store.append("t", 0, message("new")).join();
            assertThat(firstSegment).exists();

            held.close(); // the old segment 0's last reference

            assertThat(firstSegment).as("the new log's first segment").exists();
            assertThat(bodies(store, "t", 0)).containsExactly("new");
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(bodies(store, "t", 0)).containsExactly("new");
        }
    }

    /**
     * A deletion whose checkpoint failed leaves the last checkpoint naming the deleted log's positions. A topic created
     * again under the name must not recover from them after a crash: its creation writes a checkpoint without them.
     */
    @Test
    void aTopicCreatedAgainAfterAFailedCheckpointRecoversFromItsOwnLog() throws Exception {
        AtomicBoolean failCheckpoint = new AtomicBoolean();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.RENAME && path.getFileName().toString().equals("checkpoint")
                    && failCheckpoint.get()) {
                throw new java.io.IOException("checkpoint save failed (injected)");
            }
        });
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).fileIO(io).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("t", TopicLayout.TOPIC, 1);
            List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                appends.add(store.append("t", 0, message("old-" + i)));
            }
            appends.forEach(CompletableFuture::join);
        } // the clean close's checkpoint names log t and its positions
        Path killed = Files.createTempDirectory(dir.getParent(), "killed");
        try (Store store = Store.open(dir, config)) {
            failCheckpoint.set(true);
            assertThatThrownBy(() -> store.deleteTopic("t")).isInstanceOf(StoreException.class)
                    .hasMessageContaining("is deleted");
            failCheckpoint.set(false);
            store.createTopic("t", TopicLayout.TOPIC, 1);
            store.append("t", 0, message("new")).join();
            copyTree(dir, killed.resolve("store")); // what a kill leaves: no clean-shutdown marker
        }
        try (Store store = Store.open(killed.resolve("store"), TestStores.small(WritePath.MMAP, FlushMode.SYNC)
                .build())) {
            assertThat(store.openedClean()).isFalse();
            assertThat(store.maxOffset("t", 0)).isEqualTo(1);
            assertThat(bodies(store, "t", 0)).containsExactly("new");
        }
    }

    /**
     * An append that read a QUEUE topic's count before the topic was deleted and created again with fewer queues
     * must not create a log for a queue the new topic does not have. Each round races one such append against a
     * deletion and a creation; the append waits for the lock the deletion holds, and the creation often gets it
     * first.
     */
    @Test
    void anAppendAimedAtADeletedQueueTopicCreatesNoQueueBeyondTheNewCount() throws Exception {
        try (Store store = Store.open(dir, config(FlushMode.ASYNC))) {
            for (int round = 0; round < 100; round++) {
                store.createTopic("t", TopicLayout.QUEUE, 4);
                CountDownLatch ready = new CountDownLatch(1);
                List<Throwable> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
                Thread writer = Thread.ofPlatform().start(() -> {
                    ready.countDown();
                    try {
                        // Declared-only, as the broker appends: an append after the deletion must not create "t" in the
                        // shared log, which would stop the creation below.
                        store.appendOpaqueToDeclared("t", 3, java.lang.foreign.MemorySegment.ofArray(new byte[64]), 1,
                                Durability.FLUSH_MODE).join();
                    } catch (CompletionException e) {
                        if (!(e.getCause() instanceof TopicDeletedException)) {
                            unexpected.add(e.getCause());
                        }
                    } catch (IllegalArgumentException e) {
                        // read the new count: queue 3 is not below 2
                    } catch (RuntimeException e) {
                        unexpected.add(e);
                    }
                });
                ready.await();
                store.deleteTopic("t");
                store.createTopic("t", TopicLayout.QUEUE, 2);
                writer.join();
                assertThat(unexpected).isEmpty();
                assertThat(store.ownLogStatuses()).as("round " + round).doesNotContainKey("t/3");
                assertThat(Files.exists(dir.resolve("logs").resolve("t").resolve("3"))).as("round " + round).isFalse();
                store.deleteTopic("t");
            }
        }
    }

    /** A read the deletion cuts short fails with TopicDeletedException, not as if the store had failed. */
    @Test
    void aReadCutShortByTheDeletionSaysTheTopicWasDeleted() throws Exception {
        AtomicBoolean armed = new AtomicBoolean();
        CountDownLatch paused = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.READ && HookedFileIO.isSegment(path) && armed.compareAndSet(true, false)) {
                paused.countDown();
                HookedFileIO.awaitBounded(resume);
            }
        });
        // Only the newest segment mapped: a read of the first goes through the file, where the hook pauses it.
        StoreConfig config = TestStores.small(WritePath.CHANNEL, FlushMode.SYNC).segmentSizeBytes(64 * 1024)
                .maxMappedSegments(1).fileIO(io).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("t", TopicLayout.TOPIC, 1);
            List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                appends.add(store.append("t", 0, Message.of(new byte[1000])));
            }
            appends.forEach(CompletableFuture::join);
            armed.set(true);
            CompletableFuture<ReadResult> read = new CompletableFuture<>();
            Thread reader = Thread.ofPlatform().start(() -> {
                try {
                    read.complete(store.read("t", 0, 0, 10, 1 << 20));
                } catch (Throwable e) {
                    read.completeExceptionally(e);
                }
            });
            HookedFileIO.awaitBounded(paused);
            assertThat(store.deleteTopic("t")).isTrue();
            resume.countDown();
            reader.join();
            read.thenAccept(ReadResult::close);
            assertThat(read).failsWithin(java.time.Duration.ofSeconds(5)).withThrowableThat()
                    .withCauseInstanceOf(TopicDeletedException.class)
                    .withMessageContaining("topic t was deleted while it was read");
        }
    }

    private static void copyTree(Path from, Path to) throws java.io.IOException {
        try (var paths = Files.walk(from)) {
            for (Path path : (Iterable<Path>) paths::iterator) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(path, target);
                }
            }
        }
    }
}
