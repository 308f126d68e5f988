package io.sluice.store;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The crash tests' child process: appends with SYNC flush from several threads forever and prints one line
 * per acknowledged message, {@code ACK <queue> <offset> <crc> END}, only after its future completed. The
 * parent kills it with SIGKILL at a random moment.
 */
public final class CrashChild {

    private CrashChild() {
    }

    /** @param args directory, write path, threads, seed */
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        WritePath path = WritePath.valueOf(args[1]);
        int threads = Integer.parseInt(args[2]);
        long seed = Long.parseLong(args[3]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);
        Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).build());
        out.println("READY");
        AtomicLong sequence = new AtomicLong();
        for (int t = 0; t < threads; t++) {
            int producer = t;
            Thread.ofPlatform().start(() -> {
                while (true) {
                    long i = sequence.getAndIncrement();
                    byte[] body = TestStores.body(seed, producer, i, 50 + (int) (i % 2000));
                    int queue = producer % 2;
                    long crc = TestStores.crc(body);
                    AppendResult result = store.append("crash", queue,
                            Message.builder().keys(Long.toHexString(crc)).body(body).build()).join();
                    synchronized (out) {
                        out.println("ACK " + queue + " " + result.firstQueueOffset() + " " + crc + " END");
                    }
                }
            });
        }
    }
}
