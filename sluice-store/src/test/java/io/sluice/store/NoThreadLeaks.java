package io.sluice.store;

import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that leaves store threads running (a store it did not close, or a close that left threads
 * behind). Threads are given up to 10 s to finish; the check polls, it does not sleep a fixed time.
 */
public final class NoThreadLeaks implements AfterEachCallback {

    @Override
    public void afterEach(ExtensionContext context) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        List<String> leaked = storeThreads();
        while (!leaked.isEmpty() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(20_000_000L);
            leaked = storeThreads();
        }
        if (!leaked.isEmpty()) {
            throw new AssertionError("test leaked store threads: " + leaked);
        }
    }

    private static List<String> storeThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(name -> name.startsWith("sluice-"))
                .toList();
    }
}
