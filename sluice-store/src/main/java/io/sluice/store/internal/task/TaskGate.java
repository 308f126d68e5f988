package io.sluice.store.internal.task;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lets a log's background tasks run only while the log is open, and lets close wait for the ones running:
 * a task {@link #enter}s (refused once closed) and {@link #exit}s; {@link #closeAndAwait} refuses new entries
 * and waits until every task inside has left. So no task touches a file or a mapping after close released it.
 *
 * <p>Thread-safe.
 */
public final class TaskGate {

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition empty = lock.newCondition();
    private int inside;
    private boolean closed;

    /** @return true if the caller may run (it must then call {@link #exit}); false once closed */
    public boolean enter() {
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            inside++;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Leaves after a successful {@link #enter}. */
    public void exit() {
        lock.lock();
        try {
            if (--inside == 0) {
                empty.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Refuses new entries and waits until every task inside has left. Idempotent. */
    public void closeAndAwait() {
        lock.lock();
        try {
            closed = true;
            boolean interrupted = false;
            while (inside > 0) {
                try {
                    empty.await();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        } finally {
            lock.unlock();
        }
    }

    /** @return true once {@link #closeAndAwait} was called */
    public boolean closed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }
}
