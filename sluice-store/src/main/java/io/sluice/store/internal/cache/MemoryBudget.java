package io.sluice.store.internal.cache;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Memory shared by many users, each taking what it allocates and giving it back when it frees it: the store's
 * {@code cacheBytes}, shared by the read caches of all its logs, so a store of thousands of logs holds no more
 * cache memory than one. Thread-safe.
 */
public final class MemoryBudget {

    private final AtomicLong available;

    /** @param bytes the budget */
    public MemoryBudget(long bytes) {
        this.available = new AtomicLong(bytes);
    }

    /** @return a budget that never runs out */
    public static MemoryBudget unlimited() {
        return new MemoryBudget(Long.MAX_VALUE);
    }

    /** @return true if {@code bytes} were available and are now taken */
    public boolean tryTake(long bytes) {
        long now;
        do {
            now = available.get();
            if (now < bytes) {
                return false;
            }
        } while (!available.compareAndSet(now, now - bytes));
        return true;
    }

    /** Gives back bytes taken earlier. */
    public void give(long bytes) {
        available.addAndGet(bytes);
    }

    /** @return bytes not taken */
    public long available() {
        return available.get();
    }
}
