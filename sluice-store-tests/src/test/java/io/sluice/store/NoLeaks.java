package io.sluice.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that leaves store threads running, file descriptors open or files mapped under a JUnit
 * temporary directory (a store it did not close, or a close that left something behind). Threads are
 * given up to 10 s to finish; the check polls, it does not sleep a fixed time. Descriptors and mappings
 * are read from {@code /proc/self} (Linux).
 */
public final class NoLeaks implements BeforeEachCallback, AfterEachCallback {

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NoLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) throws IOException {
        // What was there before the test (a leak of an earlier test class) is that test's failure, not this one's.
        context.getStore(NAMESPACE).put("before", leaks());
    }

    @Override
    public void afterEach(ExtensionContext context) throws IOException {
        @SuppressWarnings("unchecked") // put by beforeEach, always a List<String>
        List<String> before = context.getStore(NAMESPACE).get("before", List.class);
        long deadline = System.nanoTime() + 10_000_000_000L;
        List<String> leaked = newLeaks(before);
        while (!leaked.isEmpty() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(20_000_000L);
            leaked = newLeaks(before);
        }
        if (!leaked.isEmpty()) {
            throw new AssertionError("test leaked: " + leaked);
        }
    }

    private static List<String> newLeaks(List<String> before) throws IOException {
        List<String> now = leaks();
        now.removeAll(before);
        return now;
    }

    /** JUnit's {@code @TempDir} directories: {@code <java.io.tmpdir>/junit-<digits>}. */
    private static final String TEMP_DIRECTORIES = Path.of(System.getProperty("java.io.tmpdir")).resolve("junit")
            .toString();

    private static boolean inTempDirectory(String path) {
        return path.startsWith(TEMP_DIRECTORIES);
    }

    private static List<String> leaks() throws IOException {
        List<String> leaked = new ArrayList<>();
        // By name and identity: schedulers of different stores number their threads alike.
        Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                .filter(thread -> thread.getName().startsWith("sluice-"))
                .forEach(thread -> leaked.add("thread " + thread.getName() + " #" + thread.threadId()));
        Path fds = Path.of("/proc/self/fd");
        if (Files.isDirectory(fds)) {
            try (Stream<Path> open = Files.list(fds)) {
                for (Path fd : open.toList()) {
                    try {
                        String target = Files.readSymbolicLink(fd).toString();
                        if (inTempDirectory(target)) {
                            leaked.add("open file " + target);
                        }
                    } catch (IOException e) {
                        // The descriptor closed while listing.
                    }
                }
            }
        }
        Path maps = Path.of("/proc/self/maps");
        if (Files.exists(maps)) {
            for (String line : Files.readAllLines(maps)) {
                int at = line.indexOf('/');
                if (at >= 0 && inTempDirectory(line.substring(at))) {
                    leaked.add("mapping " + line.substring(at));
                }
            }
        }
        return leaked;
    }
}
