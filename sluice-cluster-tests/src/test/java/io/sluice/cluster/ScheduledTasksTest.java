package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The production scheduler of the node's duties: rounds on named threads, timed as they ask, ended at close. */
class ScheduledTasksTest {

    private final ScheduledTasks tasks = new ScheduledTasks("test-tasks");

    @AfterEach
    void close() {
        tasks.close();
    }

    @Test
    void aTaskRunsItsRoundsOnAThreadNamedAfterItUntilDone() throws Exception {
        List<String> threads = new CopyOnWriteArrayList<>();
        List<Long> at = new CopyOnWriteArrayList<>();
        CountDownLatch ended = new CountDownLatch(1);
        AtomicInteger endings = new AtomicInteger();
        Tasks.Task task = tasks.start("node-1-counting", Duration.ZERO, new Tasks.Round() {
            @Override
            public Tasks.Next run() {
                threads.add(Thread.currentThread().getName());
                at.add(System.nanoTime());
                return at.size() == 3 ? Tasks.Next.DONE : Tasks.Next.inMillis(50);
            }

            @Override
            public void ended() {
                endings.incrementAndGet();
                ended.countDown();
            }
        });
        assertThat(ended.await(10, TimeUnit.SECONDS)).as("the task ended").isTrue();
        assertThat(task.ended()).isTrue();
        assertThat(threads).containsOnly("node-1-counting").hasSize(3);
        assertThat(at.get(2) - at.get(1)).as("the wait between rounds").isGreaterThanOrEqualTo(
                TimeUnit.MILLISECONDS.toNanos(50));
        assertThat(endings.get()).isEqualTo(1);
    }

    @Test
    void aRoundThatThrowsEndsItsTaskAndAPeriodicOneGoesOn() throws Exception {
        CountDownLatch failedEnded = new CountDownLatch(1);
        tasks.start("node-1-failing", Duration.ZERO, new Tasks.Round() {
            @Override
            public Tasks.Next run() throws Exception {
                throw new java.io.IOException("a failure nobody handled");
            }

            @Override
            public void ended() {
                failedEnded.countDown();
            }
        });
        assertThat(failedEnded.await(10, TimeUnit.SECONDS)).isTrue();
        CountDownLatch rounds = new CountDownLatch(3);
        tasks.every("node-1-periodic", Duration.ofMillis(10), () -> {
            rounds.countDown();
            throw new IllegalStateException("this round failed");
        });
        assertThat(rounds.await(10, TimeUnit.SECONDS)).as("rounds after failed ones").isTrue();
    }

    @Test
    void closeInterruptsTheRoundsUnderWayAndEndsEveryTask() throws Exception {
        CountDownLatch blocked = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        AtomicInteger endings = new AtomicInteger();
        Tasks.Task blocking = tasks.start("node-1-blocking", Duration.ZERO, new Tasks.Round() {
            @Override
            public Tasks.Next run() {
                blocked.countDown();
                try {
                    new CountDownLatch(1).await();
                } catch (InterruptedException e) {
                    interrupted.countDown();
                }
                return Tasks.Next.inMillis(1);
            }

            @Override
            public void ended() {
                endings.incrementAndGet();
            }
        });
        Tasks.Task waiting = tasks.start("node-1-waiting", Duration.ofHours(1), new Tasks.Round() {
            @Override
            public Tasks.Next run() {
                throw new AssertionError("never due");
            }

            @Override
            public void ended() {
                endings.incrementAndGet();
            }
        });
        assertThat(blocked.await(10, TimeUnit.SECONDS)).isTrue();
        tasks.close();
        assertThat(interrupted.getCount()).as("the blocked round interrupted").isZero();
        assertThat(blocking.ended()).isTrue();
        assertThat(waiting.ended()).isTrue();
        assertThat(endings.get()).isEqualTo(2);
        assertThat(tasks.start("node-1-late", Duration.ZERO, () -> Tasks.Next.DONE).ended())
                .as("a task started after close").isTrue();
    }
}
