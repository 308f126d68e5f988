package io.sluice.cluster;

import io.sluice.cluster.ClusterNode.PartitionId;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the leadership of the partitions this node leads on their preferred replicas, as Kafka's controller does.
 *
 * <p>A partition's preferred replica is the first of its replicas, and placement starts each partition one broker
 * further round the cluster, so that leaders spread; but a Raft group elects whichever replica's election timer ends
 * first, so three partitions created at once may all be led by one broker, and a broker that came back after a failure
 * leads nothing. Here a leader hands leadership to the preferred replica (Ratis's leadership transfer: the preferred
 * replica, once its log matches the leader's, is told to stand for election at once) in two cases: a new group (added
 * here in the last {@link #NEW_GROUP_SECONDS} seconds, as a topic was created or grown, and not led by its preferred
 * replica since), as Kafka elects the preferred replica when a topic is created, whichever term the group's elections
 * got to; and, every check interval (Kafka's
 * {@code leader.imbalance.check.interval.seconds}, 300 s by default; zero turns these checks off, as Kafka's
 * {@code auto.leader.rebalance.enable=false}), any leader that is not the preferred replica. Either only while the
 * preferred replica is in sync (its log has every committed entry), so that the hand-over takes a round trip: Ratis
 * refuses appends while it hands over.
 *
 * <p>A hand-over costs the partition's producers one refused request each (NOT_LEADER_OR_FOLLOWER, naming the new
 * leader), as Kafka's preferred election does.
 *
 * <p>Thread-safe; {@link #check} is called from one background thread.
 */
final class PreferredLeaders {

    private static final Logger LOG = LoggerFactory.getLogger(PreferredLeaders.class);

    /**
     * The most hand-overs a check starts: each refuses its partition's appends for a round trip, so a node leading
     * many partitions away from their preferred replicas moves them a few a second, not all at once.
     */
    static final int HAND_OVERS_PER_CHECK = 4;
    /** The first wait after a hand-over that did not happen; it doubles with each one after, up to a minute. */
    static final long FIRST_BACK_OFF_MILLIS = 1_000;
    static final long LONGEST_BACK_OFF_MILLIS = 60_000;

    /** How long a group added on a node counts as new there: its elections, and a hand-over, take seconds at most. */
    static final long NEW_GROUP_SECONDS = 60;

    /**
     * A partition this node leads, as a check sees it.
     *
     * @param partition the partition
     * @param replicas its replicas, the preferred one first
     * @param term the term this node leads it in
     * @param inSync the replicas whose logs hold every committed entry
     * @param isNew whether this node added the partition's group lately (a topic created or grown, not a restart) and
     *     has not seen it led by its preferred replica since
     */
    record Led(PartitionId partition, List<Integer> replicas, long term, List<Integer> inSync, boolean isNew) {
    }

    /** The node's side: what it leads, and a hand-over. */
    interface Node {
        /** @return the partitions this node leads now */
        List<Led> led();

        /**
         * Hands a partition's leadership to replica {@code to}.
         *
         * @return completes with true once {@code to} was told to stand, false if the hand-over was refused
         */
        CompletableFuture<Boolean> handOver(PartitionId partition, int to);
    }

    private final int self;
    private final Node node;
    private final long checkIntervalNanos;
    private final LongSupplier nanoClock;
    private final Set<PartitionId> handingOver = ConcurrentHashMap.newKeySet();
    /** After a hand-over that did not happen, when the next may start. */
    private final Map<PartitionId, BackOff> backOff = new ConcurrentHashMap<>();
    private long lastFullCheck;

    /** A partition's wait: the next hand-over starts at {@code until} at the earliest; the wait was this long. */
    private record BackOff(long until, long waitNanos) {
    }

    /**
     * @param self this node's id
     * @param node what it leads, and how it hands over
     * @param checkInterval how often every partition led here is checked; zero: only new groups are
     * @param nanoClock the clock the interval is measured by
     */
    PreferredLeaders(int self, Node node, Duration checkInterval, LongSupplier nanoClock) {
        this.self = self;
        this.node = node;
        this.checkIntervalNanos = checkInterval.toNanos();
        this.nanoClock = nanoClock;
        this.lastFullCheck = nanoClock.getAsLong();
    }

    /**
     * Hands over the partitions to move now: those of new groups, and, once the check interval passed
     * since the last full check, every other one; at most {@link #HAND_OVERS_PER_CHECK}, and none whose last
     * hand-over did not happen within its back-off. Does not wait for the hand-overs.
     *
     * @return how many hand-overs it started
     */
    int check() {
        long now = nanoClock.getAsLong();
        boolean full = checkIntervalNanos > 0 && now - lastFullCheck >= checkIntervalNanos;
        if (full) {
            lastFullCheck = now;
        }
        int started = 0;
        for (Led led : node.led()) {
            int preferred = led.replicas().getFirst();
            BackOff wait = backOff.get(led.partition());
            if (started == HAND_OVERS_PER_CHECK || preferred == self || !(full || led.isNew())
                    || !led.inSync().contains(preferred) || wait != null && now < wait.until()
                    || !handingOver.add(led.partition())) {
                continue;
            }
            started++;
            LOG.info("node {} hands the leadership of {} to its preferred replica, node {} (term {})", self,
                    led.partition(), preferred, led.term());
            CompletableFuture<Boolean> handOver;
            try {
                handOver = node.handOver(led.partition(), preferred);
            } catch (RuntimeException e) {
                handOver = CompletableFuture.failedFuture(e);
            }
            handOver.whenComplete((done, failure) -> {
                if (failure != null || !Boolean.TRUE.equals(done)) {
                    BackOff last = backOff.get(led.partition());
                    long waitNanos = last == null ? TimeUnit.MILLISECONDS.toNanos(FIRST_BACK_OFF_MILLIS)
                            : Math.min(2 * last.waitNanos(), TimeUnit.MILLISECONDS.toNanos(LONGEST_BACK_OFF_MILLIS));
                    backOff.put(led.partition(), new BackOff(nanoClock.getAsLong() + waitNanos, waitNanos));
                    LOG.info("node {}: the hand-over of {} to node {} did not happen now (tried again in {} ms): {}",
                            self, led.partition(), preferred, TimeUnit.NANOSECONDS.toMillis(waitNanos),
                            failure != null ? failure.toString() : "refused");
                } else {
                    backOff.remove(led.partition());
                }
                handingOver.remove(led.partition());
            });
        }
        return started;
    }
}
