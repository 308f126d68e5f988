package io.sluice.store.internal.cache;

/**
 * A hold on store memory that a reader has a view of: a write-buffer page or a segment mapping stays where it
 * is until every pin on it is released.
 */
public interface Pin {

    /** Releases this hold; call once per acquisition. */
    void release();
}
