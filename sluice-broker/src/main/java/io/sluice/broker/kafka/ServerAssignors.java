package io.sluice.broker.kafka;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;

/**
 * The assignors a KIP-848 consumer group's coordinator runs (group.remote.assignor on the client), as Kafka's
 * group.consumer.assignors offers them: {@value #UNIFORM} (the default) and {@value #RANGE}.
 *
 * <ul>
 *   <li>{@value #UNIFORM} spreads the partitions of the topics each member subscribes to so that no member has two
 *       more than another that could take one of them, and keeps a partition where it was when the balance allows
 *       (fewer partitions move, so fewer are revoked and handed over). Members with other subscriptions are balanced
 *       over the partitions they can take.</li>
 *   <li>{@value #RANGE} gives each topic's subscribers, ordered by member id, contiguous ranges of its partitions, the
 *       first ones one more where they do not divide evenly: co-partitioned topics of the same subscribers land
 *       together, as the classic range assignor places them.</li>
 * </ul>
 *
 * <p>Stateless; the maps passed in are not changed.
 */
final class ServerAssignors {

    static final String UNIFORM = "uniform";
    static final String RANGE = "range";
    /** The names served, the default first. */
    static final List<String> NAMES = List.of(UNIFORM, RANGE);

    private ServerAssignors() {
    }

    /** One partition of a topic, by the topic's id. */
    record TopicPartition(Uuid topic, int partition) {
    }

    /**
     * @param assignor {@value #UNIFORM} or {@value #RANGE}
     * @param subscriptions each member's subscribed topics (by id, only topics that exist)
     * @param partitionCounts the partition count of every topic subscribed
     * @param previous the group's last target assignment (for stickiness)
     * @return each member's partitions (every member has an entry, maybe empty)
     */
    static Map<String, Map<Uuid, Set<Integer>>> assign(String assignor, Map<String, Set<Uuid>> subscriptions,
                                                       Map<Uuid, Integer> partitionCounts,
                                                       Map<String, Map<Uuid, Set<Integer>>> previous) {
        return switch (assignor) {
            case RANGE -> range(subscriptions, partitionCounts);
            case UNIFORM -> uniform(subscriptions, partitionCounts, previous);
            default -> throw new IllegalArgumentException("no assignor " + assignor);
        };
    }

    private static Map<String, Map<Uuid, Set<Integer>>> range(Map<String, Set<Uuid>> subscriptions,
                                                              Map<Uuid, Integer> partitionCounts) {
        Map<String, Map<Uuid, Set<Integer>>> result = empty(subscriptions);
        Map<Uuid, List<String>> subscribers = new TreeMap<>();
        new TreeMap<>(subscriptions).forEach((member, topics) -> topics.forEach(topic ->
                subscribers.computeIfAbsent(topic, t -> new ArrayList<>()).add(member)));
        subscribers.forEach((topic, members) -> {
            int count = partitionCounts.getOrDefault(topic, 0);
            int each = count / members.size();
            int extra = count % members.size();
            int next = 0;
            for (int i = 0; i < members.size(); i++) {
                int take = each + (i < extra ? 1 : 0);
                for (int j = 0; j < take; j++) {
                    result.get(members.get(i)).computeIfAbsent(topic, t -> new TreeSet<>()).add(next++);
                }
            }
        });
        return result;
    }

    private static Map<String, Map<Uuid, Set<Integer>>> uniform(Map<String, Set<Uuid>> subscriptions,
                                                                Map<Uuid, Integer> partitionCounts,
                                                                Map<String, Map<Uuid, Set<Integer>>> previous) {
        Map<String, List<TopicPartition>> owned = new HashMap<>();
        subscriptions.keySet().forEach(member -> owned.put(member, new ArrayList<>()));
        List<TopicPartition> all = new ArrayList<>();
        new TreeMap<>(partitionCounts).forEach((topic, count) -> {
            for (int p = 0; p < count; p++) {
                all.add(new TopicPartition(topic, p));
            }
        });
        int members = subscriptions.size();
        // A member keeps what it had, up to an even share, so that a balanced group moves nothing.
        int share = members == 0 ? 0 : (all.size() + members - 1) / members;
        Map<TopicPartition, String> holder = new HashMap<>();
        previous.forEach((member, assignment) -> {
            Set<Uuid> topics = subscriptions.get(member);
            if (topics == null) {
                return;
            }
            assignment.forEach((topic, partitions) -> {
                if (!topics.contains(topic)) {
                    return;
                }
                for (int p : partitions) {
                    TopicPartition partition = new TopicPartition(topic, p);
                    if (p < partitionCounts.getOrDefault(topic, 0) && !holder.containsKey(partition)
                            && owned.get(member).size() < share) {
                        holder.put(partition, member);
                        owned.get(member).add(partition);
                    }
                }
            });
        });
        Comparator<String> byLoad = Comparator.<String>comparingInt(m -> owned.get(m).size())
                .thenComparing(Comparator.naturalOrder());
        for (TopicPartition partition : all) {
            if (holder.containsKey(partition)) {
                continue;
            }
            subscriptions.entrySet().stream().filter(e -> e.getValue().contains(partition.topic()))
                    .map(Map.Entry::getKey).min(byLoad).ifPresent(member -> {
                        holder.put(partition, member);
                        owned.get(member).add(partition);
                    });
        }
        balance(subscriptions, owned, byLoad);
        Map<String, Map<Uuid, Set<Integer>>> result = empty(subscriptions);
        owned.forEach((member, partitions) -> partitions.forEach(partition -> result.get(member)
                .computeIfAbsent(partition.topic(), t -> new TreeSet<>()).add(partition.partition())));
        return result;
    }

    /**
     * Moves one partition at a time from a member to one with at least two fewer that subscribes to its topic, until
     * none can move. Every move lowers the sum of the squared loads, so it ends; a group with one subscription (the
     * usual case) is balanced before it and moves nothing.
     */
    private static void balance(Map<String, Set<Uuid>> subscriptions, Map<String, List<TopicPartition>> owned,
                                Comparator<String> byLoad) {
        boolean moved = true;
        while (moved) {
            moved = false;
            List<String> order = new ArrayList<>(owned.keySet());
            order.sort(byLoad.reversed());
            search:
            for (String from : order) {
                for (int i = order.size() - 1; i >= 0; i--) {
                    String to = order.get(i);
                    if (owned.get(from).size() - owned.get(to).size() < 2) {
                        break;
                    }
                    Set<Uuid> topics = subscriptions.get(to);
                    List<TopicPartition> candidates = owned.get(from);
                    for (int j = candidates.size() - 1; j >= 0; j--) {
                        if (topics.contains(candidates.get(j).topic())) {
                            owned.get(to).add(candidates.remove(j));
                            moved = true;
                            break search;
                        }
                    }
                }
            }
        }
    }

    private static Map<String, Map<Uuid, Set<Integer>>> empty(Map<String, Set<Uuid>> subscriptions) {
        Map<String, Map<Uuid, Set<Integer>>> result = new HashMap<>();
        subscriptions.keySet().forEach(member -> result.put(member, new HashMap<>()));
        return result;
    }
}
