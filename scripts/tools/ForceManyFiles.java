import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What one force of many files costs, three ways: each round writes 1 KiB at the end of each of N files (written
 * full of zeros beforehand and forced, as the store's segments are under SYNC, so that a force writes data only),
 * then makes the round durable with N fdatasync calls one after another, with N fdatasync calls over 4 threads (the
 * store's scheduler threads), or with one syncfs(2) of the file system (every dirty page of it, one journal commit,
 * one cache flush). Prints, per way and N, the rounds per second and the 1 KiB writes made durable per second, over
 * {@code seconds} each, the ways interleaved. Run by scripts/force-many-files.sh:
 * {@code java --enable-native-access=ALL-UNNAMED ForceManyFiles.java <dir> <seconds> <N...>}.
 */
public class ForceManyFiles {
    public static void main(String[] args) throws Throwable {
        Path dir = Path.of(args[0]);
        double seconds = Double.parseDouble(args[1]);
        Linker linker = Linker.nativeLinker();
        MethodHandle open = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle syncfs = linker.downcallHandle(linker.defaultLookup().find("syncfs").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        int dirFd;
        try (Arena arena = Arena.ofConfined()) {
            dirFd = (int) open.invokeExact(arena.allocateFrom(dir.toString()), 0);
        }
        if (dirFd < 0) {
            throw new IllegalStateException("open " + dir);
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        ByteBuffer record = ByteBuffer.allocateDirect(1024);
        for (int round = 1; round <= 3; round++) {
            for (int a = 2; a < args.length; a++) {
                int n = Integer.parseInt(args[a]);
                List<FileChannel> files = new ArrayList<>();
                long size = 64L << 20;
                ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
                for (int i = 0; i < n; i++) {
                    Path file = dir.resolve("f-" + i);
                    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                            StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
                    long fill = n >= 100 ? 4L << 20 : size;
                    for (long at = 0; at < fill; at += zeros.capacity()) {
                        zeros.clear();
                        channel.write(zeros, at);
                    }
                    channel.force(true);
                    files.add(channel);
                }
                int ways = 3;
                for (int w = 0; w < ways; w++) {
                    int way = (w + round) % ways;
                    long[] positions = new long[n];
                    long deadline = System.nanoTime() + (long) (seconds * 1e9);
                    long start = System.nanoTime();
                    long rounds = 0;
                    long limit = n >= 100 ? 4L << 20 : size;
                    while (System.nanoTime() < deadline) {
                        for (int i = 0; i < n; i++) {
                            record.clear();
                            files.get(i).write(record, positions[i]);
                            positions[i] = (positions[i] + 1024) % limit;
                        }
                        switch (way) {
                            case 0 -> {
                                for (FileChannel file : files) {
                                    file.force(false);
                                }
                            }
                            case 1 -> {
                                List<Future<?>> done = new ArrayList<>();
                                for (FileChannel file : files) {
                                    done.add(pool.submit(() -> {
                                        file.force(false);
                                        return null;
                                    }));
                                }
                                for (Future<?> f : done) {
                                    f.get();
                                }
                            }
                            default -> {
                                if ((int) syncfs.invokeExact(dirFd) != 0) {
                                    throw new IllegalStateException("syncfs failed");
                                }
                            }
                        }
                        rounds++;
                    }
                    double elapsed = (System.nanoTime() - start) / 1e9;
                    String name = switch (way) {
                        case 0 -> "fdatasync each, in turn";
                        case 1 -> "fdatasync each, 4 threads";
                        default -> "one syncfs";
                    };
                    System.out.printf("round %d, %d files, %s: %.0f rounds/s, %.0f durable 1 KiB writes/s%n", round, n,
                            name, rounds / elapsed, rounds * n / elapsed);
                }
                for (FileChannel file : files) {
                    file.close();
                }
                for (int i = 0; i < n; i++) {
                    Files.delete(dir.resolve("f-" + i));
                }
            }
        }
        pool.shutdown();
    }
}
