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
 *   <li>{@value #RANGE} gives each topic's subscribers, static members first by instance id (so that a restarted one
 *       gets its ranges back) and then the others by member id, contiguous ranges of its partitions, the
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
     * @param subscriptions each member's subscribed topics (by id, only topics that exist), in the order
     *     {@value #RANGE} hands the ranges out
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
        subscriptions.forEach((member, topics) -> topics.forEach(topic ->
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
     * Moves partitions until no member has two more than another it could pass one to, directly or along a chain: a
     * member may give a partition of a topic only some others subscribe to, to one of them, which gives one of
     * another topic on, and so on, so that only the first loses one and only the last gains one (with mixed
     * subscriptions a direct move is often impossible where a chain balances). Each chain is the shortest found from a
     * most loaded member (breadth first), and each lowers the sum of the squared loads, so it ends; a group with one
     * subscription (the usual case) is balanced before it and moves nothing.
     */
    private static void balance(Map<String, Set<Uuid>> subscriptions, Map<String, List<TopicPartition>> owned,
                                Comparator<String> byLoad) {
        Map<Uuid, List<String>> subscribers = new HashMap<>();
        new TreeMap<>(subscriptions).forEach((member, topics) -> topics.forEach(topic ->
                subscribers.computeIfAbsent(topic, t -> new ArrayList<>()).add(member)));
        boolean moved = true;
        while (moved) {
            moved = false;
            List<String> order = new ArrayList<>(owned.keySet());
            order.sort(byLoad.reversed());
            if (order.isEmpty()) {
                return;
            }
            int least = owned.get(order.getLast()).size();
            for (String from : order) {
                if (owned.get(from).size() - least < 2) {
                    return; // balanced: nothing from here on can give to anyone (usually at once)
                }
                if (chain(from, subscribers, owned)) {
                    moved = true;
                    break;
                }
            }
        }
    }

    /** One step of a chain: the member reached, and the topic of the partition it was passed. */
    private record Step(String from, Uuid topic) {
    }

    /**
     * Looks breadth first for a chain from {@code from} to a member with at least two fewer partitions, and moves one
     * partition along each link of it.
     *
     * @return whether a chain was found (and moved)
     */
    private static boolean chain(String from, Map<Uuid, List<String>> subscribers,
                                 Map<String, List<TopicPartition>> owned) {
        int limit = owned.get(from).size() - 2;
        Map<String, Step> reached = new HashMap<>();
        reached.put(from, null);
        java.util.ArrayDeque<String> queue = new java.util.ArrayDeque<>(List.of(from));
        while (!queue.isEmpty()) {
            String member = queue.poll();
            Set<Uuid> topics = new TreeSet<>();
            owned.get(member).forEach(partition -> topics.add(partition.topic()));
            for (Uuid topic : topics) {
                for (String next : subscribers.getOrDefault(topic, List.of())) {
                    if (reached.containsKey(next)) {
                        continue;
                    }
                    reached.put(next, new Step(member, topic));
                    if (owned.get(next).size() <= limit) {
                        for (String to = next; reached.get(to) != null; to = reached.get(to).from()) {
                            Step step = reached.get(to);
                            List<TopicPartition> giving = owned.get(step.from());
                            for (int i = giving.size() - 1; i >= 0; i--) {
                                if (giving.get(i).topic().equals(step.topic())) {
                                    owned.get(to).add(giving.remove(i));
                                    break;
                                }
                            }
                        }
                        return true;
                    }
                    queue.add(next);
                }
            }
        }
        return false;
    }

    private static Map<String, Map<Uuid, Set<Integer>>> empty(Map<String, Set<Uuid>> subscriptions) {
        Map<String, Map<Uuid, Set<Integer>>> result = new HashMap<>();
        subscriptions.keySet().forEach(member -> result.put(member, new HashMap<>()));
        return result;
    }
}
