package io.sluice.sim;

import io.sluice.sim.DirectoryNode.NameChange;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import io.sluice.store.io.StoreIOException;
import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * An in-memory file system behind the store's {@link FileIO} seam that models what a power cut does to a
 * POSIX file system, TigerBeetle-style, so that the store's durability can be proved rather than argued.
 *
 * <h2>The model</h2>
 * <ul>
 * <li>A file has a volatile image (the page cache: what reads, writes and mappings see) and a durable image
 *     (what the device holds). {@link StoreFile#force()} copies the volatile image, and the file's size, to the
 *     durable one. Nothing else does: writes, mapped stores, {@code zeroRange}, {@code allocate} and
 *     {@code truncate} are volatile until forced.</li>
 * <li>A directory has volatile entries and durable entries. {@link #syncDirectory} makes the volatile ones
 *     durable. Creating, deleting and renaming a name are logged in the directory until then.</li>
 * <li>{@link #crash} cuts the power: it returns a new file system holding what the disk would hold, chosen by a
 *     seeded random generator per {@link CrashModel}. Per file, every 4 KiB page whose volatile bytes differ from
 *     its durable bytes independently survives, is lost, or is torn (each 512-byte sector independently old or
 *     new), so later pages may survive where earlier ones did not. An unforced size change survives or not.
 *     Per directory, a prefix of the logged name operations survives (a journaling file system commits them in
 *     order). A file no surviving name reaches is gone.</li>
 * </ul>
 * Mappings are views of the volatile image (with the caller's arena as their scope, so using one after the
 * store unmapped it throws, as it would fault on a real system).
 *
 * <p>This class keeps the tree of names, the operations of the {@link FileIO} seam and the armed cut; an open file
 * is a {@code SimFile}, a file's two images a {@code FileNode}, a directory's entries and name log a
 * {@code DirectoryNode}, and what survives a cut is chosen by a {@code PowerCut}.
 *
 * <p>Thread-safe (one lock), though a simulation drives it from one thread. Memory of files is freed by
 * {@link #release()}, which must wait until every store using this file system has closed.
 */
public final class SimFileSystem implements FileIO {

    /** Bytes per page: the unit of writeback and of loss. */
    public static final int PAGE_BYTES = 4096;
    /** Bytes per sector: the unit of tearing. */
    public static final int SECTOR_BYTES = 512;

    /** Guards everything of this file system, its open files' calls included. */
    final Object lock = new Object();
    private final DirectoryNode root;
    private final Set<String> locks = new HashSet<>();
    /** The arenas of every file's memory, closed by {@link #release()}. */
    private final List<Arena> arenas = new ArrayList<>();
    /** Counted under the lock, by this file system and its open files. */
    final Counters counters = new Counters();
    private long capacityBytes = Long.MAX_VALUE / 4;
    private String deadReason;
    /** Operations until an armed power cut, or -1. */
    private long cutAfterOperations = -1;
    private SplittableRandom cutRandom;
    private CrashModel cutModel;
    private SimFileSystem afterCut;
    private long operations;

    /** What the file system has done, for tests that assert on I/O (a store at rest does none). */
    public static final class Counters {
        /** File forces. */
        public long forces;
        /** Directory syncs. */
        public long directorySyncs;
        /** Bytes written with writes, direct writes, allocations, zeroing and truncation (not mapped stores). */
        public long bytesWritten;
        /** Names created, deleted or renamed. */
        public long nameChanges;
        /** Paths of the files forced, in order (a file forced twice is listed twice). */
        public List<String> forcedFiles = new ArrayList<>();
        /** Whole-file-system syncs (syncfs). */
        public long fileSystemSyncs;

        Counters copy() {
            Counters copy = new Counters();
            copy.forces = forces;
            copy.directorySyncs = directorySyncs;
            copy.bytesWritten = bytesWritten;
            copy.nameChanges = nameChanges;
            copy.forcedFiles = List.copyOf(forcedFiles);
            copy.fileSystemSyncs = fileSystemSyncs;
            return copy;
        }
    }

    /** An empty file system whose root directory exists. */
    public SimFileSystem() {
        this.root = new DirectoryNode();
    }

    private SimFileSystem(DirectoryNode root) {
        this.root = root;
    }

    /** @return a snapshot of the counters */
    public Counters counters() {
        synchronized (lock) {
            return counters.copy();
        }
    }

    /**
     * Sets the file system's size: writes, allocations and new files beyond it fail with ENOSPC.
     *
     * @param bytes the capacity
     */
    public void capacity(long bytes) {
        synchronized (lock) {
            capacityBytes = bytes;
        }
    }

    // ---------------------------------------------------------------- power cut

    /**
     * Arms a power cut at the {@code operations}-th file system operation from now (1 = the next): that
     * operation does not happen; it and every later one fail, and {@link #afterPowerCut()} holds what survived.
     * Mapped stores are not operations, so the cut falls between them and the next call into the file system.
     *
     * @param operations operations until the cut, 1 or more
     * @param random the seeded source of every choice
     * @param model how unforced state is treated
     */
    public void armPowerCut(long operations, SplittableRandom random, CrashModel model) {
        synchronized (lock) {
            if (operations < 1) {
                throw new IllegalArgumentException("operations must be 1 or more, was " + operations);
            }
            cutAfterOperations = operations;
            cutRandom = random;
            cutModel = model;
        }
    }

    /** Calls off an armed power cut that has not struck. */
    public void disarmPowerCut() {
        synchronized (lock) {
            cutAfterOperations = -1;
        }
    }

    /** @return the file system after an armed power cut struck, or null if it has not */
    public SimFileSystem afterPowerCut() {
        synchronized (lock) {
            return afterCut;
        }
    }

    /** @return operations performed so far */
    public long operations() {
        synchronized (lock) {
            return operations;
        }
    }

    /** Paths containing this text have their name changes and syncs printed (-Dsluice.sim.trace=...), or null. */
    private static final String TRACE = System.getProperty("sluice.sim.trace");

    private void trace(String what, Path path) {
        if (TRACE != null && path.toString().contains(TRACE)) {
            System.out.println("sim #" + operations + " " + what + " " + path);
        }
    }

    /** Counts an operation and strikes an armed cut when it falls due. Call under the lock. */
    void operation() throws IOException {
        checkAlive();
        operations++;
        if (cutAfterOperations > 0 && --cutAfterOperations == 0) {
            afterCut = crash(cutRandom, cutModel);
            if (TRACE != null) {
                System.out.println("sim #" + operations + " POWER CUT");
            }
            throw new IOException(deadReason + " (power cut at operation " + operations + ")");
        }
    }

    /**
     * Cuts the power: this file system stops working (every operation fails, mappings stay readable until
     * their stores unmap them), and the returned one holds what survived.
     *
     * @param random the seeded source of every choice
     * @param model how unforced state is treated
     * @return the file system after the power comes back
     */
    public SimFileSystem crash(SplittableRandom random, CrashModel model) {
        synchronized (lock) {
            if (deadReason != null) {
                throw new IllegalStateException("this file system is already gone: " + deadReason);
            }
            deadReason = "simulated power loss: this file system is gone";
            PowerCut cut = new PowerCut(random, model);
            SimFileSystem after = new SimFileSystem(cut.survivor(root));
            after.capacityBytes = capacityBytes;
            cut.survivingFiles().forEach(file -> file.materialize(after.arenas));
            return after;
        }
    }

    /**
     * A copy of this file system as the running process sees it, every file's bytes and every name durable in it,
     * as if everything were forced now; this one goes on unchanged. For a test that starts many runs from one state
     * (what a power cut left, say) without building it again for each.
     *
     * @return the copy, to be released on its own
     */
    public SimFileSystem copy() {
        synchronized (lock) {
            if (deadReason != null) {
                throw new IllegalStateException("this file system is gone: " + deadReason);
            }
            PowerCut everything = new PowerCut(new SplittableRandom(0), CrashModel.KEEP_ALL);
            SimFileSystem copy = new SimFileSystem(everything.survivor(root));
            copy.capacityBytes = capacityBytes;
            everything.survivingFiles().forEach(file -> file.materialize(copy.arenas));
            return copy;
        }
    }

    /** Frees every file's memory. Call once no store uses this file system (nor a mapping of it). */
    public void release() {
        synchronized (lock) {
            for (Arena arena : arenas) {
                arena.close();
            }
            arenas.clear();
            if (deadReason == null) {
                deadReason = "released";
            }
        }
    }

    /** @return a text listing of every path, its size, and whether it differs from its durable image */
    public String describe() {
        synchronized (lock) {
            StringBuilder out = new StringBuilder();
            describe(root, "/", out);
            return out.toString();
        }
    }

    private static void describe(DirectoryNode directory, String prefix, StringBuilder out) {
        for (Map.Entry<String, SimNode> entry : directory.entries.entrySet()) {
            String path = prefix + entry.getKey();
            boolean durableName = directory.durable.get(entry.getKey()) == entry.getValue();
            if (entry.getValue() instanceof DirectoryNode child) {
                out.append(path).append("/").append(durableName ? "" : "  (name not synced)").append('\n');
                describe(child, path + "/", out);
            } else {
                FileNode file = (FileNode) entry.getValue();
                out.append(path).append("  ").append(file.size).append(" bytes")
                        .append(file.size != file.durableSize ? " (durable " + file.durableSize + ")" : "")
                        .append(durableName ? "" : "  (name not synced)").append('\n');
            }
        }
    }

    // ---------------------------------------------------------------- FileIO

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        synchronized (lock) {
            operation();
            Located at = locate(path);
            SimNode node = at.parent.entries.get(at.name);
            if (node instanceof DirectoryNode) {
                throw new IOException(path + ": is a directory");
            }
            if (node == null) {
                if (mode != OpenMode.CREATE) {
                    throw new NoSuchFileException(path.toString());
                }
                FileNode created = new FileNode();
                created.allocate(arenas, 0);
                at.parent.change(new NameChange(NameChange.Kind.CREATE, at.name, created, null));
                trace("create", path);
                counters.nameChanges++;
                node = created;
            }
            return new SimFile(this, (FileNode) node, path, mode == OpenMode.READ_ONLY);
        }
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        synchronized (lock) {
            operation();
            directoryAt(directory).sync();
            trace("sync", directory);
            counters.directorySyncs++;
        }
    }

    /** syncfs: every file's data and every directory's names become durable. */
    @Override
    public boolean syncFileSystem(Path path) throws IOException {
        synchronized (lock) {
            operation();
            makeDurable(root);
            trace("syncfs", path);
            counters.fileSystemSyncs++;
            return true;
        }
    }

    /** A handle whose syncs are {@link #syncFileSystem}: the simulation's syncs report no write-back errors. */
    @Override
    public FileSystemSync openFileSystemSync(Path path) {
        return new FileSystemSync() {
            @Override
            public void sync() throws IOException {
                syncFileSystem(path);
            }

            @Override
            public void close() {
            }
        };
    }

    private static void makeDurable(DirectoryNode directory) {
        directory.sync();
        for (SimNode node : directory.entries.values()) {
            if (node instanceof DirectoryNode child) {
                makeDurable(child);
            } else if (node instanceof FileNode file) {
                file.makeDurable();
            }
        }
    }

    @Override
    public DiskSpace diskSpace(Path path) throws IOException {
        synchronized (lock) {
            operation();
            long used = usedBytes(root);
            long free = Math.max(0, capacityBytes - used);
            return new DiskSpace(capacityBytes, free, free);
        }
    }

    private static long usedBytes(DirectoryNode directory) {
        long used = 0;
        for (SimNode node : directory.entries.values()) {
            used += node instanceof FileNode file ? file.size : usedBytes((DirectoryNode) node);
        }
        return used;
    }

    @Override
    public boolean exists(Path path) throws IOException {
        synchronized (lock) {
            operation();
            return find(path) != null;
        }
    }

    @Override
    public boolean isDirectory(Path path) throws IOException {
        synchronized (lock) {
            operation();
            return find(path) instanceof DirectoryNode;
        }
    }

    @Override
    public List<Path> list(Path directory) throws IOException {
        synchronized (lock) {
            operation();
            DirectoryNode node = directoryAt(directory);
            List<Path> names = new ArrayList<>();
            for (String name : node.entries.keySet()) {
                names.add(directory.resolve(name));
            }
            return names;
        }
    }

    @Override
    public boolean createDirectory(Path directory) throws IOException {
        synchronized (lock) {
            operation();
            Located at = locate(directory);
            SimNode existing = at.parent.entries.get(at.name);
            if (existing instanceof DirectoryNode) {
                return false;
            }
            if (existing != null) {
                throw new FileAlreadyExistsException(directory.toString());
            }
            at.parent.change(new NameChange(NameChange.Kind.CREATE, at.name, new DirectoryNode(), null));
            counters.nameChanges++;
            return true;
        }
    }

    @Override
    public boolean delete(Path path) throws IOException {
        synchronized (lock) {
            operation();
            Located at = locate(path);
            SimNode node = at.parent.entries.get(at.name);
            if (node == null) {
                return false;
            }
            if (node instanceof DirectoryNode directory && !directory.entries.isEmpty()) {
                throw new DirectoryNotEmptyException(path.toString());
            }
            at.parent.change(new NameChange(NameChange.Kind.DELETE, at.name, null, null));
            trace("delete", path);
            counters.nameChanges++;
            return true;
        }
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        synchronized (lock) {
            operation();
            Located from = locate(source);
            Located to = locate(target);
            if (from.parent != to.parent) {
                throw new IOException("the simulated file system renames within one directory only: " + source
                        + " -> " + target);
            }
            SimNode node = from.parent.entries.get(from.name);
            if (node == null) {
                throw new NoSuchFileException(source.toString());
            }
            if (node instanceof DirectoryNode || to.parent.entries.get(to.name) instanceof DirectoryNode) {
                throw new IOException("the simulated file system renames files only: " + source + " -> " + target);
            }
            from.parent.change(new NameChange(NameChange.Kind.RENAME, to.name, node, from.name));
            counters.nameChanges++;
        }
    }

    @Override
    public Closeable tryLock(Path path) throws IOException {
        synchronized (lock) {
            operation();
            open(path, OpenMode.CREATE).close();
            String key = path.toAbsolutePath().normalize().toString();
            if (!locks.add(key)) {
                return null;
            }
            return () -> {
                synchronized (lock) {
                    locks.remove(key);
                }
            };
        }
    }

    // ---------------------------------------------------------------- internals

    private void checkAlive() throws IOException {
        if (deadReason != null) {
            throw new IOException(deadReason);
        }
    }

    private record Located(DirectoryNode parent, String name) {
    }

    private Located locate(Path path) throws IOException {
        Path absolute = path.toAbsolutePath().normalize();
        Path parent = absolute.getParent();
        if (parent == null) {
            throw new IOException("cannot use the root directory as a file: " + path);
        }
        return new Located(directoryAt(parent), absolute.getFileName().toString());
    }

    private DirectoryNode directoryAt(Path path) throws IOException {
        SimNode node = find(path);
        if (node == null) {
            throw new NoSuchFileException(path.toString());
        }
        if (!(node instanceof DirectoryNode directory)) {
            throw new NotDirectoryException(path.toString());
        }
        return directory;
    }

    private SimNode find(Path path) {
        SimNode node = root;
        for (Path part : path.toAbsolutePath().normalize()) {
            if (!(node instanceof DirectoryNode directory)) {
                return null;
            }
            node = directory.entries.get(part.toString());
            if (node == null) {
                return null;
            }
        }
        return node;
    }

    /** Gives a file room for {@code newSize} bytes, or fails with ENOSPC if the file system has none. */
    void grow(FileNode file, long newSize) throws IOException {
        long growth = newSize - file.size;
        if (growth > 0 && usedBytes(root) + growth > capacityBytes) {
            throw new StoreIOException("No space left on device (simulated): " + growth + " more bytes",
                    StoreIOException.ENOSPC);
        }
        file.allocate(arenas, newSize);
    }
}
