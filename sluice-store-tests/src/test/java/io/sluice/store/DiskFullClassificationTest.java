package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import io.sluice.store.io.StoreIOException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A full disk is recognised by its error number, not by message text: the JDK's I/O messages are the C
 * library's {@code strerror} text, which follows the process locale, so under another locale ENOSPC would be
 * taken for an I/O error and the store would turn read-only instead of refusing appends until space is freed.
 * The fake disk reports no usable bytes (through {@link io.sluice.store.io.FileIO#diskSpace}) and segment writes
 * fail with ENOSPC messages in several languages; the {@code /dev/full} case fails a segment write with a real
 * ENOSPC from the operating system. Expected: the append fails with {@link DiskFullException}, the store stays
 * OPEN and appends resume once space is back.
 */
@ExtendWith(NoLeaks.class)
class DiskFullClassificationTest {

    private static final long SEED = 0xD15C_F011L;
    private static final String TOPIC = "t";

    @TempDir
    Path dir;

    private final AtomicBoolean full = new AtomicBoolean();

    /** A real ENOSPC: a write to {@code /dev/full}, whose message is the C library's, in the process's locale. */
    private static final String DEV_FULL = "/dev/full";

    private HookedFileIO io(String enospcMessage) {
        HookedFileIO io = new HookedFileIO().reportDiskUse(0.10);
        return io.hook((op, path) -> {
            if (full.get() && HookedFileIO.isSegment(path) && (op == HookedFileIO.Op.WRITE
                    || op == HookedFileIO.Op.WRITE_DIRECT || op == HookedFileIO.Op.ALLOCATE)) {
                if (enospcMessage.equals(DEV_FULL)) {
                    // A real ENOSPC from the operating system, through the default file seam.
                    try (StoreFile devFull = FileIO.DEFAULT.open(Path.of(DEV_FULL), FileIO.OpenMode.READ_WRITE)) {
                        devFull.writeFully(ByteBuffer.allocateDirect(1), 0);
                    }
                    throw new IllegalStateException("a write to /dev/full did not fail");
                }
                throw new StoreIOException(enospcMessage, StoreIOException.ENOSPC);
            }
        });
    }

    private static StoreConfig config(HookedFileIO io) {
        return TestStores.small(WritePath.CHANNEL, FlushMode.SYNC).fileIO(io)
                .retention(RetentionPolicy.defaults().withCheckIntervalMillis(3_600_000)).build();
    }

    private static byte[] body(long sequence) {
        return TestStores.body(SEED, 0, sequence, 200);
    }

    private static void append(Store store, long sequence, Map<Long, byte[]> acked) throws Exception {
        byte[] body = body(sequence);
        acked.put(store.append(TOPIC, 0, Message.of(body)).get(10, TimeUnit.SECONDS).firstQueueOffset(), body);
    }

    @ParameterizedTest(name = "\"{0}\"")
    @ValueSource(strings = {
            "No space left on device",                              // C / en_US (control)
            "Aucun espace disponible sur le périphérique",          // fr_FR
            "Auf dem Gerät ist kein Speicherplatz mehr verfügbar",  // de_DE
            "No queda espacio en el dispositivo",                   // es_ES
            DEV_FULL  // a real ENOSPC: run with LANGUAGE=fr LC_ALL=C.UTF-8 and the JDK's message is French
    })
    void enospcIsDiskFullWhateverTheLanguageOfItsMessage(String enospcMessage) throws Exception {
        HookedFileIO io = io(enospcMessage);
        Map<Long, byte[]> acked = new TreeMap<>();
        try (Store store = Store.open(dir, config(io))) {
            for (int i = 0; i < 5; i++) {
                append(store, i, acked);
            }
            full.set(true);
            io.reportedSpace = new DiskSpace(1_000_000_000L, 0, 0);
            assertThat(store.append(TOPIC, 0, Message.of(body(5)))).failsWithin(Duration.ofSeconds(10))
                    .withThrowableOfType(ExecutionException.class)
                    .havingCause().as("an append failing with ENOSPC (\"%s\")", enospcMessage)
                    .isInstanceOf(DiskFullException.class);
            assertThat(store.status().state()).as("state after ENOSPC (reason: %s)", store.status().reason())
                    .isEqualTo(StoreStatus.State.OPEN);

            full.set(false);
            io.reportDiskUse(0.10);
            for (int i = 6; i < 10; i++) {
                append(store, i, acked);
            }
        }
        try (Store store = Store.open(dir, config(io))) {
            for (Map.Entry<Long, byte[]> message : acked.entrySet()) {
                try (ReadResult read = store.read(TOPIC, 0, message.getKey(), 1, Long.MAX_VALUE)) {
                    assertThat(read.messages()).as("acknowledged offset %d", message.getKey()).singleElement()
                            .satisfies(m -> assertThat(m.bodyBytes()).isEqualTo(message.getValue()));
                }
            }
        }
    }
}
