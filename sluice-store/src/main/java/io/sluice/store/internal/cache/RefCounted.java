package io.sluice.store.internal.cache;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The store's one lifetime scheme for memory and files that readers hold views of: segments and their
 * mappings, write-buffer pages, read-cache pages, index files and read buffers.
 *
 * <p>The owner holds one reference from birth. A reader {@link #tryRetain()}s before it looks at the memory
 * and {@link #release()}s when done. The owner {@link #retire()}s the object when it takes it out of its
 * structures (retention, eviction, unmapping, a committed page); the last release after that frees it
 * ({@link #free()}: unmap, close, return memory to a pool). From the retirement on, {@code tryRetain} fails,
 * so a reader that found the object in a stale snapshot treats it as gone, and the object is freed as soon as
 * the readers that held it before let go. So no reader ever sees unmapped or reused memory, and nothing is
 * freed while a view of it exists. An object is never reused after it is freed; its memory may be, under a
 * new object.
 *
 * <p>Thread-safe.
 */
public abstract class RefCounted implements Pin {

    private final AtomicInteger references = new AtomicInteger(1);
    private final AtomicBoolean retired = new AtomicBoolean();

    /**
     * Takes a reader's reference.
     *
     * @return false if the object is retired (its owner gave it up): the caller must not use it
     */
    public final boolean tryRetain() {
        if (retired.get()) {
            return false;
        }
        for (int current = references.get(); current > 0; current = references.get()) {
            if (references.compareAndSet(current, current + 1)) {
                if (retired.get()) {
                    release(); // retired meanwhile: this reader must not start on it
                    return false;
                }
                return true;
            }
        }
        return false;
    }

    /**
     * Drops a reference; the last one frees the object.
     *
     * @throws IllegalStateException if released more often than retained (the owner's reference goes only by
     *     {@link #retire})
     */
    @Override
    public final void release() {
        int left = references.decrementAndGet();
        if (left == 0 && retired.get()) {
            free();
        } else if (left <= 0) {
            throw new IllegalStateException(this + " released more often than retained");
        }
    }

    /**
     * At birth, for an object whose creator is its only reader (a buffer lent for one read): the owner's
     * reference becomes the reader's, so the reader's one {@link #release} frees it.
     */
    protected final void handOver() {
        retired.set(true);
    }

    /** The owner gives the object up: it is freed once no reader holds it. Idempotent. */
    public final void retire() {
        if (retired.compareAndSet(false, true)) {
            release();
        }
    }

    /**
     * The owner gives the object up only if no reader holds it, and then it is freed at once (an eviction that
     * needs the memory now). Owner operations ({@link #retire}, this) must not run concurrently with each other.
     *
     * @return true if the object was freed; false if a reader holds it (it stays live, not retired)
     */
    public final boolean retireIfUnused() {
        if (retired.get() || !references.compareAndSet(1, 0)) {
            return false;
        }
        retired.set(true);
        free();
        return true;
    }

    /** @return true while a reader (not only the owner) holds the object */
    public final boolean isHeld() {
        return references.get() > (retired.get() ? 0 : 1);
    }

    /** @return true once the owner gave the object up */
    public final boolean isRetired() {
        return retired.get();
    }

    /** @return true while readers (or the owner) hold the object */
    public final boolean isLive() {
        return references.get() > 0;
    }

    /** Frees the object; called once, by the last release. */
    protected abstract void free();
}
