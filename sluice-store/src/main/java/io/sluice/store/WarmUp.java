package io.sluice.store;

import java.util.Objects;

/**
 * How the store readies memory ahead of use. Each step is a hint: where the kernel refuses it (an old
 * kernel, no permission, another OS) the store logs once and goes on without it.
 *
 * @param preTouch how a new segment's pages are faulted in, in the background, before appends reach it
 *     ({@link WritePath#MMAP} only: the other paths do not write through the mapping)
 * @param adviseReads {@code madvise} segment mappings for how they are read: {@code MADV_WILLNEED} over the
 *     active segment's written part when the store opens, so consumers of the tail find it in memory after
 *     a restart; {@code MADV_SEQUENTIAL} over sealed segments, which catching-up consumers read front to back
 * @param lockActiveSegment {@code mlock} the active segment's mapping, and unlock it when the log rolls past
 *     it; needs {@code CAP_IPC_LOCK} or a large enough {@code RLIMIT_MEMLOCK}
 */
public record WarmUp(PreTouch preTouch, boolean adviseReads, boolean lockActiveSegment) {

    /** How new segments are faulted in. */
    public enum PreTouch {
        /** Not at all: the first append to each page faults it in. */
        NONE,
        /**
         * {@code MADV_POPULATE_READ}: page-cache pages and page tables are set up without dirtying anything;
         * the first write to a page still takes a cheap write fault.
         */
        READ,
        /**
         * {@code MADV_POPULATE_WRITE}, then a force: pages are writable and clean before use (RocketMQ's
         * {@code warmMappedFile}). Each segment costs a full write of zeros to the device in the background.
         */
        WRITE
    }

    /** Validates the fields. */
    public WarmUp {
        Objects.requireNonNull(preTouch, "preTouch");
    }

    /**
     * @return no pre-touch (READ came with appends stalled for seconds in the sustained runs of
     *     docs/benchmarks.md), read advice on, no locking
     */
    public static WarmUp defaults() {
        return new WarmUp(PreTouch.NONE, true, false);
    }

    /** @return no warm-up at all */
    public static WarmUp none() {
        return new WarmUp(PreTouch.NONE, false, false);
    }
}
