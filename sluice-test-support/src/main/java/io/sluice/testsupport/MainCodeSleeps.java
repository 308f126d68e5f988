package io.sluice.testsupport;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.lang.ArchRule;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Main code sleeps nowhere: a loop that sleeps between polls can only be waited out by a test, and hides what it
 * waits for. Waiting is done on what is waited for (a future, a notification), and a recurring duty is a task on a
 * scheduler a test can drive (the cluster's {@code Tasks}, the store's {@code Scheduler}). The rule is checked by
 * every module on the main classes its test class path holds ({@link #check}): the cluster's tests check the store,
 * the simulation, the broker and the cluster; the CLI and the bench lab check their own with it.
 *
 * <p>{@link #ALLOWED} names what sleeps today, each with why. The entries are to go as their code is fixed, and the
 * check fails on an entry whose class no longer sleeps, so that the list only shrinks.
 */
public final class MainCodeSleeps {

    /**
     * What may still sleep, by top-level class (its nested and anonymous classes too), and why. None of the cluster's
     * own: its duties are tasks.
     */
    public static final Map<String, String> ALLOWED = Map.ofEntries(
            // Broker.
            Map.entry("io.sluice.broker.net.FrameServer", "backs off between failed accepts (out of file"
                    + " descriptors, say) and paces the reaper of idle and stuck connections: a scheduled task would"
                    + " do both"),
            Map.entry("io.sluice.broker.net.Outbound", "lingers once, 200 ms, on a connection's writer before it"
                    + " closes a connection it refused, so that the client reads why before the end of the stream:"
                    + " not a poll, nothing to wait on"),
            Map.entry("io.sluice.broker.kafka.LogCleaner", "holds its own thread back to"
                    + " log.cleaner.io.max.bytes.per.second, when one is set, as Kafka's cleaner's throttler does: a"
                    + " pause of the one thread that reads and writes, not a poll"),
            Map.entry("io.sluice.broker.kafka.TopicApis", "looks every 10 ms, before it answers Metadata, whether a"
                    + " partition's leader is still in doubt: a doubt is a matter of time (a leader silent too long),"
                    + " which no change notification tells"),
            // Bench lab: drives peers and child processes from outside, where sleeping is the measurement's pacing or
            // a poll of another process.
            Map.entry("io.sluice.bench.peers.RocketMqTarget", "polls a RocketMQ broker's consume queue until it counts"
                    + " what was acknowledged (its dispatcher has no notification to wait on)"),
            Map.entry("io.sluice.bench.broker.BrokerProcess", "polls a child broker process until it listens and"
                    + " answers Admin"),
            Map.entry("io.sluice.bench.tools.FollowerFetchMain", "a prototype follower in a process of its own: polls"
                    + " the broker it copies from until the topic is created there (nothing to wait on across"
                    + " processes)"),
            Map.entry("io.sluice.bench.broker.Load", "paces the load generator's sends at the asked rate, and gives the"
                    + " consumer a second to connect"),
            Map.entry("io.sluice.bench.broker.ClusterRaceRun", "paces the failover producer and polls the clusters it"
                    + " races (leaders, in-sync replicas, the first acknowledgement after a kill)"),
            Map.entry("io.sluice.bench.broker.CompactionRaceRun", "holds a paced producer's baseline window and"
                    + " polls a child broker's cleaner thread (/proc) and partition directory (du) until its cleaning"
                    + " is over: neither process has a notification to wait on"),
            Map.entry("io.sluice.bench.tools.FailoverTimeline", "paces a producer at a steady rate through a leader's"
                    + " kill and polls the cluster's processes for the new leader, timing what a client sees"),
            Map.entry("io.sluice.bench.tools.RestartTimes", "waits between a broker's kill and its restart, and polls the"
                    + " restarted process until it answers Metadata, timing it"),
            Map.entry("io.sluice.bench.experiments.MmapModes", "samples memory every 50 ms and holds a mapping a moment"
                    + " so the samples show what the kernel does next"));

    private MainCodeSleeps() {
    }

    /**
     * Imports the main classes of Sluice on the class path: neither test classes, test jars nor the test-support
     * module (io.sluice.testsupport), whose classes are main code of a library for tests only.
     */
    public static JavaClasses mainClasses() {
        return new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(MainCodeSleeps::notTestCode).importPackages("io.sluice");
    }

    private static boolean notTestCode(Location location) {
        return !location.contains("-tests.jar") && !location.contains("/test-classes/")
                && !location.contains("/io/sluice/testsupport/");
    }

    /**
     * Checks the rule on {@code classes}: none calls {@link Thread#sleep} or {@link TimeUnit#sleep} unless allowed,
     * and each allowed one among them still does.
     *
     * @throws AssertionError if a class sleeps that may not, or one allowed no longer does
     */
    public static void check(JavaClasses classes) {
        rule().check(classes);
        List<String> stale = new ArrayList<>();
        for (String allowed : ALLOWED.keySet()) {
            if (classes.contain(allowed) && !sleeps(classes, allowed)) {
                stale.add(allowed);
            }
        }
        if (!stale.isEmpty()) {
            throw new AssertionError("no longer sleeping, so to be taken off MainCodeSleeps.ALLOWED: " + stale);
        }
    }

    /** @return the rule: main code calls no sleep, but for the allowed classes */
    public static ArchRule rule() {
        return noClasses().that(DescribedPredicate.not(allowed()))
                .should().callMethod(Thread.class, "sleep", long.class)
                .orShould().callMethod(Thread.class, "sleep", long.class, int.class)
                .orShould().callMethod(Thread.class, "sleep", Duration.class)
                .orShould().callMethod(TimeUnit.class, "sleep", long.class)
                .because("a loop that sleeps can only be waited out by a test: wait on what is waited for, or run"
                        + " the duty as a task on a scheduler tests drive (MainCodeSleeps)")
                .allowEmptyShould(true);
    }

    private static DescribedPredicate<JavaClass> allowed() {
        return DescribedPredicate.describe("allowed to sleep (MainCodeSleeps.ALLOWED)",
                javaClass -> ALLOWED.containsKey(topLevel(javaClass.getName())));
    }

    private static String topLevel(String name) {
        int nested = name.indexOf('$');
        return nested < 0 ? name : name.substring(0, nested);
    }

    /** @return whether the allowed class, or one nested in it, calls a sleep */
    private static boolean sleeps(JavaClasses classes, String allowed) {
        return classes.stream().filter(javaClass -> topLevel(javaClass.getName()).equals(allowed))
                .flatMap(javaClass -> javaClass.getMethodCallsFromSelf().stream())
                .anyMatch(call -> call.getTarget().getName().equals("sleep")
                        && (call.getTargetOwner().isEquivalentTo(Thread.class)
                                || call.getTargetOwner().isEquivalentTo(TimeUnit.class)));
    }
}
