package io.sluice.store.internal.log;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.NoLeaks;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.WarmUp;
import io.sluice.store.internal.io.NativeIO;
import io.sluice.store.io.FileIO;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Pre-touching, read advice and locking, and their fallbacks when the kernel refuses. */
@ExtendWith(NoLeaks.class)
class SegmentWarmerTest {

    private static final long SIZE = 4 << 20;

    @TempDir
    Path dir;

    private Segment fresh() throws Exception {
        return Segment.create(FileIO.DEFAULT, dir, 0, SIZE, SegmentAllocation.FALLOCATE, true);
    }

    @Test
    void aFreshFallocatedSegmentIsNotResidentUntilPreTouched() throws Exception {
        try (Segment untouched = fresh()) {
            new SegmentWarmer(new WarmUp(WarmUp.PreTouch.NONE, false, false), true).preTouch(untouched);
            assertThat(io.sluice.store.internal.io.NativeIO.isResident(untouched.mapping())).isFalse();
        }
    }

    @ParameterizedTest
    @EnumSource(value = WarmUp.PreTouch.class, names = {"READ", "WRITE"})
    void preTouchMakesEveryPageResident(WarmUp.PreTouch mode) throws Exception {
        try (Segment segment = fresh()) {
            new SegmentWarmer(new WarmUp(mode, false, false), true).preTouch(segment);
            assertThat(io.sluice.store.internal.io.NativeIO.isResident(segment.mapping())).isTrue();
            assertThat(segment.mapping().asSlice(0, 4096).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE))
                    .containsOnly((byte) 0);
        }
    }

    @Test
    void theManualTouchFallbackFaultsPagesInToo() throws Exception {
        try (Segment segment = fresh()) {
            SegmentWarmer.touch(segment.mapping(), false);
            assertThat(io.sluice.store.internal.io.NativeIO.isResident(segment.mapping())).isTrue();
        }
    }

    @Test
    void readOnlyMappingsAreNotPreTouched() throws Exception {
        try (Segment segment = Segment.create(FileIO.DEFAULT, dir, 0, SIZE, SegmentAllocation.FALLOCATE, false)) {
            new SegmentWarmer(WarmUp.defaults(), false).preTouch(segment);
            assertThat(io.sluice.store.internal.io.NativeIO.isResident(segment.mapping())).isFalse();
        }
    }

    @Test
    // "restricted": the test makes a segment for an address nothing is mapped at, on purpose.
    @SuppressWarnings("restricted")
    void lockingAndAdviceRefusedByTheKernelReturnFalseInsteadOfFailing() {
        try (Arena arena = Arena.ofConfined()) {
            // An address range nothing is mapped at: mlock fails with ENOMEM, madvise with ENOMEM.
            MemorySegment unmapped = MemorySegment.ofAddress(4096).reinterpret(4096);
            assertThat(NativeIO.mlock(unmapped)).isFalse();
            assertThat(NativeIO.madvise(unmapped, NativeIO.MADV_WILLNEED)).isFalse();
            MemorySegment heapless = arena.allocate(4096, 4096);
            assertThat(NativeIO.madvise(heapless, 12345)).isFalse();
            assertThat(NativeIO.syncFileRange(-1, 0, 4096)).isFalse();
        }
    }

    @Test
    void theActiveSegmentIsLockedWhileActiveAndUnlockedWhenSealed() throws Exception {
        // Locking needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK; where refused, the warmer goes on
        // without it (lockingAndAdviceRefusedByTheKernel... covers that), and there is nothing to check here.
        try (Segment probe = fresh()) {
            Assumptions.assumeTrue(NativeIO.mlock(probe.mapping()) && NativeIO.munlock(probe.mapping()),
                    "mlock is not permitted here");
        }
        Files.deleteIfExists(dir.resolve(Segment.fileName(0)));
        try (Segment segment = fresh()) {
            SegmentWarmer warmer = new SegmentWarmer(new WarmUp(WarmUp.PreTouch.NONE, true, true), true);
            long before = lockedKilobytes();
            warmer.activated(segment);
            assertThat(lockedKilobytes() - before).isEqualTo(SIZE / 1024);
            assertThat(io.sluice.store.internal.io.NativeIO.isResident(segment.mapping())).isTrue();
            warmer.sealed(segment, true);
            assertThat(lockedKilobytes()).isEqualTo(before);
        }
    }

    /** @return VmLck of this process, in KiB */
    private static long lockedKilobytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmLck:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new AssertionError("no VmLck in /proc/self/status");
    }
}
