package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The simulated file system keeps exactly what a POSIX file system promises across a power cut, and no more. */
class SimFileSystemTest {

    private static final Path DIR = Path.of("/data");
    private static final Path FILE = DIR.resolve("f");
    private static final int PAGE = SimFileSystem.PAGE_BYTES;

    private final java.util.List<SimFileSystem> systems = new java.util.ArrayList<>();

    @AfterEach
    void release() {
        systems.forEach(SimFileSystem::release);
    }

    private SimFileSystem fresh() throws IOException {
        SimFileSystem fs = track(new SimFileSystem());
        fs.createDirectory(DIR);
        fs.syncDirectory(Path.of("/"));
        return fs;
    }

    private SimFileSystem track(SimFileSystem fs) {
        systems.add(fs);
        return fs;
    }

    private static byte[] pattern(int length, int seed) {
        byte[] bytes = new byte[length];
        new SplittableRandom(seed).nextBytes(bytes);
        for (int i = 0; i < length; i++) {
            bytes[i] |= 1; // never zero, so a lost byte (zero) is always told apart
        }
        return bytes;
    }

    private static void write(FileIO fs, Path path, byte[] bytes, long at) throws IOException {
        try (StoreFile file = fs.open(path, FileIO.OpenMode.CREATE)) {
            file.writeFully(ByteBuffer.wrap(bytes), at);
        }
    }

    private static void force(FileIO fs, Path path) throws IOException {
        try (StoreFile file = fs.open(path, FileIO.OpenMode.READ_WRITE)) {
            file.force();
        }
    }

    private static byte[] read(FileIO fs, Path path) throws IOException {
        try (StoreFile file = fs.open(path, FileIO.OpenMode.READ_ONLY)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
            while (buffer.hasRemaining() && file.read(buffer, buffer.position()) >= 0) {
                // reads until full
            }
            return buffer.array();
        }
    }

    @Test
    void forcedBytesAndSyncedNamesSurviveEveryModel() throws IOException {
        byte[] bytes = pattern(3 * PAGE + 100, 1);
        for (CrashModel model : new CrashModel[] {CrashModel.UNIFORM, CrashModel.LOSE_ALL, CrashModel.KEEP_ALL,
                CrashModel.MOSTLY_KEPT}) {
            SimFileSystem fs = fresh();
            write(fs, FILE, bytes, 0);
            force(fs, FILE);
            fs.syncDirectory(DIR);
            SimFileSystem after = track(fs.crash(new SplittableRandom(7), model));
            assertThat(read(after, FILE)).as(model.name()).isEqualTo(bytes);
        }
    }

    @Test
    void unforcedBytesAreLostWhenNothingIsWrittenBack() throws IOException {
        SimFileSystem fs = fresh();
        byte[] forced = pattern(PAGE, 2);
        write(fs, FILE, forced, 0);
        force(fs, FILE);
        fs.syncDirectory(DIR);
        write(fs, FILE, pattern(PAGE, 3), 0);
        write(fs, FILE, pattern(PAGE, 4), PAGE);
        SimFileSystem after = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(read(after, FILE)).isEqualTo(forced);
    }

    @Test
    void aKilledProcessLeavesEverythingTheKernelHeld() throws IOException {
        SimFileSystem fs = fresh();
        byte[] bytes = pattern(2 * PAGE, 5);
        write(fs, FILE, bytes, 0);
        SimFileSystem after = track(fs.crash(new SplittableRandom(1), CrashModel.KEEP_ALL));
        assertThat(read(after, FILE)).isEqualTo(bytes);
    }

    @Test
    void aNameIsDurableOnlyOnceItsDirectoryIsSynced() throws IOException {
        SimFileSystem fs = fresh();
        write(fs, FILE, pattern(10, 6), 0);
        force(fs, FILE);
        SimFileSystem lost = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(lost.exists(FILE)).as("forced file whose name was never synced").isFalse();

        SimFileSystem synced = fresh();
        write(synced, FILE, pattern(10, 6), 0);
        synced.syncDirectory(DIR);
        SimFileSystem kept = track(synced.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(kept.exists(FILE)).isTrue();
        assertThat(read(kept, FILE)).as("name synced, data never forced").isEmpty();
    }

    @Test
    void aDeletedNameComesBackUnlessTheDirectoryWasSynced() throws IOException {
        SimFileSystem fs = fresh();
        write(fs, FILE, pattern(10, 7), 0);
        force(fs, FILE);
        fs.syncDirectory(DIR);
        fs.delete(FILE);
        assertThat(fs.exists(FILE)).isFalse();
        SimFileSystem after = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(read(after, FILE)).isEqualTo(pattern(10, 7));
    }

    @Test
    void anAtomicReplaceLeavesTheOldOrTheNewFileNeverAMix() throws IOException {
        byte[] old = pattern(PAGE * 2, 8);
        byte[] fresh = pattern(PAGE * 2, 9);
        boolean sawOld = false;
        boolean sawNew = false;
        for (int seed = 0; seed < 200; seed++) {
            SimFileSystem fs = fresh();
            write(fs, FILE, old, 0);
            force(fs, FILE);
            fs.syncDirectory(DIR);
            Path temp = DIR.resolve("f.tmp");
            write(fs, temp, fresh, 0);
            force(fs, temp);
            fs.rename(temp, FILE);
            SimFileSystem after = track(fs.crash(new SplittableRandom(seed), CrashModel.UNIFORM));
            byte[] survived = read(after, FILE);
            assertThat(Arrays.equals(survived, old) || Arrays.equals(survived, fresh)).as("seed " + seed).isTrue();
            sawOld |= Arrays.equals(survived, old);
            sawNew |= Arrays.equals(survived, fresh);
            fs.release();
        }
        assertThat(sawOld).isTrue();
        assertThat(sawNew).isTrue();
    }

    /** Pages are lost, kept and torn independently: later pages can survive where earlier ones did not. */
    @Test
    void unforcedPagesSurviveOutOfOrderAndTearAtSectors() throws IOException {
        byte[] bytes = pattern(8 * PAGE, 10);
        boolean laterKeptEarlierLost = false;
        boolean torn = false;
        for (int seed = 0; seed < 100; seed++) {
            SimFileSystem fs = fresh();
            try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE)) {
                file.allocate(bytes.length, false);
                file.force();
            }
            fs.syncDirectory(DIR);
            write(fs, FILE, bytes, 0);
            byte[] survived = read(track(fs.crash(new SplittableRandom(seed), CrashModel.UNIFORM)), FILE);
            boolean[] kept = new boolean[8];
            for (int page = 0; page < 8; page++) {
                int newSectors = 0;
                for (int sector = 0; sector < PAGE / SimFileSystem.SECTOR_BYTES; sector++) {
                    int at = page * PAGE + sector * SimFileSystem.SECTOR_BYTES;
                    if (survived[at] == bytes[at]) {
                        newSectors++;
                        assertThat(Arrays.copyOfRange(survived, at, at + 512))
                                .isEqualTo(Arrays.copyOfRange(bytes, at, at + 512));
                    } else {
                        assertThat(Arrays.copyOfRange(survived, at, at + 512)).containsOnly(0);
                    }
                }
                kept[page] = newSectors == 8;
                torn |= newSectors > 0 && newSectors < 8;
            }
            for (int page = 1; page < 8; page++) {
                laterKeptEarlierLost |= kept[page] && !kept[page - 1];
            }
            fs.release();
        }
        assertThat(laterKeptEarlierLost).isTrue();
        assertThat(torn).isTrue();
    }

    @Test
    void mappedStoresAreVolatileUntilForced() throws IOException {
        SimFileSystem fs = fresh();
        try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE); Arena arena = Arena.ofShared()) {
            file.allocate(PAGE, false);
            file.force();
            fs.syncDirectory(DIR);
            MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, PAGE, arena);
            mapping.set(ValueLayout.JAVA_LONG, 0, 42);
            SimFileSystem lost = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
            assertThat(read(lost, FILE)).containsOnly(0);
        }
        SimFileSystem fs2 = fresh();
        try (StoreFile file = fs2.open(FILE, FileIO.OpenMode.CREATE); Arena arena = Arena.ofShared()) {
            file.allocate(PAGE, false);
            fs2.syncDirectory(DIR);
            MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, PAGE, arena);
            mapping.set(ValueLayout.JAVA_LONG, 0, 42);
            file.force();
            SimFileSystem kept = track(fs2.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
            assertThat(ByteBuffer.wrap(read(kept, FILE)).order(java.nio.ByteOrder.nativeOrder()).getLong(0))
                    .isEqualTo(42);
        }
    }

    @Test
    void anUnmappedViewCannotBeUsed() throws IOException {
        SimFileSystem fs = fresh();
        MemorySegment mapping;
        try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE); Arena arena = Arena.ofShared()) {
            file.allocate(PAGE, false);
            mapping = file.map(FileChannel.MapMode.READ_ONLY, 0, PAGE, arena);
            assertThat(mapping.get(ValueLayout.JAVA_BYTE, 0)).isZero();
        }
        MemorySegment unmapped = mapping;
        assertThatThrownBy(() -> unmapped.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void anUnforcedSizeChangeMayBeLost() throws IOException {
        SimFileSystem fs = fresh();
        try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE)) {
            file.allocate(4 * PAGE, false);
        }
        fs.syncDirectory(DIR);
        SimFileSystem after = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(read(after, FILE)).isEmpty();
    }

    @Test
    void theOldFileSystemIsGoneAfterThePowerCut() throws IOException {
        SimFileSystem fs = fresh();
        write(fs, FILE, pattern(10, 11), 0);
        StoreFile open = fs.open(FILE, FileIO.OpenMode.READ_WRITE);
        track(fs.crash(new SplittableRandom(1), CrashModel.KEEP_ALL));
        assertThatThrownBy(open::force).isInstanceOf(IOException.class).hasMessageContaining("power loss");
        assertThatThrownBy(() -> fs.exists(FILE)).isInstanceOf(IOException.class);
    }

    @Test
    void aCopyHoldsWhatTheProcessSawAsDurableAndLeavesTheOriginalAsItWas() throws IOException {
        SimFileSystem fs = fresh();
        byte[] forced = pattern(PAGE, 13);
        write(fs, FILE, forced, 0);
        force(fs, FILE);
        fs.syncDirectory(DIR);
        byte[] unforced = pattern(PAGE, 14);
        write(fs, FILE, unforced, 0);
        Path other = DIR.resolve("g");
        write(fs, other, pattern(10, 15), 0);
        SimFileSystem copy = track(fs.copy());
        write(copy, FILE, pattern(PAGE, 16), 0);
        SimFileSystem afterCopy = track(copy.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(read(afterCopy, FILE)).as("the copy's image is durable").isEqualTo(unforced);
        assertThat(afterCopy.exists(other)).as("and so are its names").isTrue();
        assertThat(read(fs, FILE)).as("the original goes on").isEqualTo(unforced);
        SimFileSystem original = track(fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL));
        assertThat(read(original, FILE)).as("with what it forced, and no more").isEqualTo(forced);
        assertThat(original.exists(other)).isFalse();
    }

    @Test
    void theSameSeedCutsTheSameWay() throws IOException {
        byte[][] results = new byte[2][];
        for (int run = 0; run < 2; run++) {
            SimFileSystem fs = fresh();
            try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE)) {
                file.allocate(16 * PAGE, false);
                file.force();
            }
            fs.syncDirectory(DIR);
            write(fs, FILE, pattern(16 * PAGE, 12), 0);
            results[run] = read(track(fs.crash(new SplittableRandom(99), CrashModel.UNIFORM)), FILE);
        }
        assertThat(results[0]).isEqualTo(results[1]);
    }

    @Test
    void missingFilesAndDirectoriesAreReportedAsSuch() throws IOException {
        SimFileSystem fs = fresh();
        assertThatThrownBy(() -> fs.open(FILE, FileIO.OpenMode.READ_WRITE)).isInstanceOf(NoSuchFileException.class);
        assertThatThrownBy(() -> fs.list(DIR.resolve("x"))).isInstanceOf(NoSuchFileException.class);
        assertThat(fs.createDirectory(DIR)).isFalse();
        assertThat(fs.delete(FILE)).isFalse();
    }

    @Test
    void theCapacityIsEnforced() throws IOException {
        SimFileSystem fs = fresh();
        fs.capacity(2 * PAGE);
        try (StoreFile file = fs.open(FILE, FileIO.OpenMode.CREATE)) {
            file.allocate(PAGE, false);
            assertThatThrownBy(() -> file.allocate(3 * PAGE, false)).hasMessageContaining("No space left on device");
        }
    }
}
