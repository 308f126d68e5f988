package io.sluice.broker.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Tells fetches waiting for data (a long poll) that a partition has new records readable. A fetch registers
 * before it looks at the partitions, so an append between its look and its wait is not missed; a waiter leaves
 * every set it joined when it completes, by a signal or by its time-out, so idle partitions keep nothing.
 * Thread-safe.
 */
final class PartitionWatch {

    private final Map<String, Set<CompletableFuture<Void>>> waiters = new ConcurrentHashMap<>();

    private static String key(String topic, int partition) {
        return topic + "\u0000" + partition;
    }

    /**
     * @param partitions topic and partition pairs
     * @return a future completed by the next {@link #signal} of one of them; complete it (a time-out) to leave
     */
    CompletableFuture<Void> register(List<Map.Entry<String, Integer>> partitions) {
        CompletableFuture<Void> waiter = new CompletableFuture<>();
        List<Set<CompletableFuture<Void>>> joined = new ArrayList<>(partitions.size());
        for (Map.Entry<String, Integer> partition : partitions) {
            Set<CompletableFuture<Void>> set = waiters.computeIfAbsent(key(partition.getKey(), partition.getValue()),
                    k -> ConcurrentHashMap.newKeySet());
            set.add(waiter);
            joined.add(set);
        }
        waiter.whenComplete((ignored, error) -> joined.forEach(set -> set.remove(waiter)));
        return waiter;
    }

    /** New records of the partition became readable. */
    void signal(String topic, int partition) {
        Set<CompletableFuture<Void>> set = waiters.get(key(topic, partition));
        if (set != null && !set.isEmpty()) {
            for (CompletableFuture<Void> waiter : set) {
                waiter.complete(null);
            }
        }
    }
}
