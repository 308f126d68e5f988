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
 * every set it joined when it completes, by a signal or by its time-out, and an emptied set is dropped, so idle
 * partitions, and partitions a fetch merely named, keep nothing.
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
        List<String> joined = new ArrayList<>(partitions.size());
        for (Map.Entry<String, Integer> partition : partitions) {
            String key = key(partition.getKey(), partition.getValue());
            // Joined atomically with the removal below, so a set is never dropped with a waiter just added.
            waiters.compute(key, (k, set) -> {
                Set<CompletableFuture<Void>> joinedSet = set != null ? set : ConcurrentHashMap.newKeySet();
                joinedSet.add(waiter);
                return joinedSet;
            });
            joined.add(key);
        }
        waiter.whenComplete((ignored, error) -> {
            for (String key : joined) {
                waiters.computeIfPresent(key, (k, set) -> {
                    set.remove(waiter);
                    return set.isEmpty() ? null : set;
                });
            }
        });
        return waiter;
    }

    /** @return partitions with a fetch waiting on them now */
    int watched() {
        return waiters.size();
    }

    /** The topic was deleted: every fetch waiting on one of its partitions wakes up. */
    void signalTopic(String topic) {
        String prefix = topic + "\u0000";
        waiters.forEach((key, set) -> {
            if (key.startsWith(prefix)) {
                set.forEach(waiter -> waiter.complete(null));
            }
        });
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
