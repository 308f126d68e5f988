package io.sluice.sim;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import io.sluice.store.io.StoreIOException;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;

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
 * <p>Thread-safe (one lock), though a simulation drives it from one thread. Memory of files is freed by
 * {@link #release()}, which must wait until every store using this file system has closed.
 */
public final class SimFileSystem implements FileIO {

    /** Bytes per page: the unit of writeback and of loss. */
    public static final int PAGE_BYTES = 4096;
    /** Bytes per sector: the unit of tearing. */
    public static final int SECTOR_BYTES = 512;
    private static final MemorySegment ZEROS = MemorySegment.ofArray(new byte[PAGE_BYTES]);

    private final Object lock = new Object();
    private final DirectoryNode root;
    private final Set<String> locks = new HashSet<>();
    private final List<Arena> arenas = new ArrayList<>();
    private final Counters counters = new Counters();
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

    /** Counts an operation and strikes an armed cut when it falls due. */
    private void operation() throws IOException {
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
            Map<Node, Node> copies = new IdentityHashMap<>();
            DirectoryNode survivor = (DirectoryNode) survive(root, random, model, copies);
            SimFileSystem after = new SimFileSystem(survivor);
            after.capacityBytes = capacityBytes;
            copies.values().forEach(node -> {
                if (node instanceof FileNode file) {
                    after.materialize(file);
                }
            });
            return after;
        }
    }

    private Node survive(Node node, SplittableRandom random, CrashModel model, Map<Node, Node> copies) {
        Node existing = copies.get(node);
        if (existing != null) {
            return existing;
        }
        if (node instanceof FileNode file) {
            FileNode copy = new FileNode();
            copy.pending = survivingContent(file, random, model);
            copies.put(node, copy);
            return copy;
        }
        DirectoryNode directory = (DirectoryNode) node;
        DirectoryNode copy = new DirectoryNode();
        copies.put(node, copy);
        TreeMap<String, Node> entries = new TreeMap<>(directory.durable);
        int kept = model.namePrefix(random, directory.log.size());
        for (int i = 0; i < kept; i++) {
            directory.log.get(i).applyTo(entries);
        }
        for (Map.Entry<String, Node> entry : entries.entrySet()) {
            copy.entries.put(entry.getKey(), survive(entry.getValue(), random, model, copies));
        }
        copy.durable.putAll(copy.entries);
        return copy;
    }

    /** The bytes a file holds after the power cut. */
    private static byte[] survivingContent(FileNode file, SplittableRandom random, CrashModel model) {
        long size = file.size == file.durableSize ? file.size : model.keepsNewSize(random) ? file.size : file.durableSize;
        byte[] content = new byte[Math.toIntExact(size)];
        long span = Math.max(size, 0);
        boolean holeMade = false;
        for (long page = 0; page < span; page += PAGE_BYTES) {
            int length = (int) Math.min(PAGE_BYTES, span - page);
            CrashModel.Fate fate;
            if (samePage(file, page, length)) {
                fate = CrashModel.Fate.KEPT;
            } else if (model.firstPageLost()) {
                fate = holeMade ? CrashModel.Fate.KEPT : CrashModel.Fate.LOST;
                holeMade = true;
            } else {
                fate = model.pageFate(random);
            }
            switch (fate) {
                case KEPT -> copyVolatile(file, page, length, content);
                case LOST -> copyDurable(file, page, length, content);
                case TORN -> {
                    for (long sector = page; sector < page + length; sector += SECTOR_BYTES) {
                        int sectorLength = (int) Math.min(SECTOR_BYTES, page + length - sector);
                        if (random.nextBoolean()) {
                            copyVolatile(file, sector, sectorLength, content);
                        } else {
                            copyDurable(file, sector, sectorLength, content);
                        }
                    }
                }
            }
        }
        return content;
    }

    private static boolean samePage(FileNode file, long at, int length) {
        for (int i = 0; i < length; i++) {
            if (volatileByte(file, at + i) != durableByte(file, at + i)) {
                return false;
            }
        }
        return true;
    }

    private static byte volatileByte(FileNode file, long at) {
        return at < file.size ? file.data.get(ValueLayout.JAVA_BYTE, at) : 0;
    }

    private static byte durableByte(FileNode file, long at) {
        return at < file.durableSize ? file.durable[(int) at] : 0;
    }

    private static void copyVolatile(FileNode file, long at, int length, byte[] content) {
        for (int i = 0; i < length; i++) {
            content[(int) at + i] = volatileByte(file, at + i);
        }
    }

    private static void copyDurable(FileNode file, long at, int length, byte[] content) {
        for (int i = 0; i < length; i++) {
            content[(int) at + i] = durableByte(file, at + i);
        }
    }

    /** Gives a file that came through a power cut its memory: volatile and durable images equal. */
    private void materialize(FileNode file) {
        byte[] content = file.pending;
        file.pending = null;
        file.durable = content;
        file.durableSize = content.length;
        file.size = content.length;
        file.allocate(this, content.length);
        MemorySegment.copy(content, 0, file.data, ValueLayout.JAVA_BYTE, 0, content.length);
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
        for (Map.Entry<String, Node> entry : directory.entries.entrySet()) {
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
            Node node = at.parent.entries.get(at.name);
            if (node instanceof DirectoryNode) {
                throw new IOException(path + ": is a directory");
            }
            if (node == null) {
                if (mode != OpenMode.CREATE) {
                    throw new NoSuchFileException(path.toString());
                }
                FileNode created = new FileNode();
                created.allocate(this, 0);
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
            DirectoryNode node = directoryAt(directory);
            node.durable.clear();
            node.durable.putAll(node.entries);
            node.log.clear();
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

    private static void makeDurable(DirectoryNode directory) {
        directory.durable.clear();
        directory.durable.putAll(directory.entries);
        directory.log.clear();
        for (Node node : directory.entries.values()) {
            if (node instanceof DirectoryNode child) {
                makeDurable(child);
            } else if (node instanceof FileNode file) {
                byte[] image = new byte[Math.toIntExact(file.size)];
                if (image.length > 0) {
                    MemorySegment.copy(file.data, ValueLayout.JAVA_BYTE, 0, image, 0, image.length);
                }
                file.durable = image;
                file.durableSize = file.size;
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
        for (Node node : directory.entries.values()) {
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
            Node existing = at.parent.entries.get(at.name);
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
            Node node = at.parent.entries.get(at.name);
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
            Node node = from.parent.entries.get(from.name);
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
        Node node = find(path);
        if (node == null) {
            throw new NoSuchFileException(path.toString());
        }
        if (!(node instanceof DirectoryNode directory)) {
            throw new NotDirectoryException(path.toString());
        }
        return directory;
    }

    private Node find(Path path) {
        Node node = root;
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

    private void reserve(FileNode file, long newSize) throws IOException {
        long growth = newSize - file.size;
        if (growth > 0 && usedBytes(root) + growth > capacityBytes) {
            throw new StoreIOException("No space left on device (simulated): " + growth + " more bytes",
                    StoreIOException.ENOSPC);
        }
    }

    abstract static sealed class Node permits FileNode, DirectoryNode {
    }

    /** A file: a volatile image (page cache) and a durable image (device). */
    static final class FileNode extends Node {
        Arena arena;
        MemorySegment data;
        long size;
        byte[] durable = new byte[0];
        long durableSize;
        int mappings;
        /** Set between a power cut and {@link SimFileSystem#materialize}. */
        byte[] pending;

        /** Gives the file room for {@code bytes} (its memory moves unless mapped; a mapped file cannot grow). */
        void allocate(SimFileSystem fs, long bytes) {
            long capacity = data == null ? 0 : data.byteSize();
            if (bytes <= capacity && data != null) {
                return;
            }
            if (mappings > 0) {
                throw new IllegalStateException("the simulated file system cannot grow a mapped file");
            }
            Arena grown = Arena.ofShared();
            long newCapacity = Math.max(bytes, Math.min(capacity * 2, capacity + (64L << 20)));
            MemorySegment memory = grown.allocate(Math.max(newCapacity, 1), 4096);
            if (data != null) {
                MemorySegment.copy(data, 0, memory, 0, size);
                fs.arenas.remove(arena);
                arena.close();
            }
            arena = grown;
            data = memory;
            fs.arenas.add(grown);
        }
    }

    /** A directory: volatile entries, durable entries, and the name changes made since the last sync. */
    static final class DirectoryNode extends Node {
        final TreeMap<String, Node> entries = new TreeMap<>();
        final TreeMap<String, Node> durable = new TreeMap<>();
        final List<NameChange> log = new ArrayList<>();

        void change(NameChange change) {
            change.applyTo(entries);
            log.add(change);
        }
    }

    /** One logged name operation of a directory. */
    record NameChange(Kind kind, String name, Node node, String from) {
        enum Kind { CREATE, DELETE, RENAME }

        void applyTo(Map<String, Node> entries) {
            switch (kind) {
                case CREATE -> entries.put(name, node);
                case DELETE -> entries.remove(name);
                case RENAME -> {
                    if (entries.get(from) == node) {
                        entries.remove(from);
                        entries.put(name, node);
                    }
                }
            }
        }
    }

    /** An open file. */
    private static final class SimFile implements StoreFile {
        private final SimFileSystem fs;
        private final FileNode node;
        private final Path path;
        private final boolean readOnly;
        private boolean closed;

        SimFile(SimFileSystem fs, FileNode node, Path path, boolean readOnly) {
            this.fs = fs;
            this.node = node;
            this.path = path;
            this.readOnly = readOnly;
        }

        private void check(boolean writing) throws IOException {
            fs.operation();
            if (closed) {
                throw new IOException(path + " is closed");
            }
            if (writing && readOnly) {
                throw new IOException(path + " is open for reading only");
            }
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public long size() throws IOException {
            synchronized (fs.lock) {
                check(false);
                return node.size;
            }
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            synchronized (fs.lock) {
                check(true);
                if (size > node.size) {
                    fs.reserve(node, size);
                    node.allocate(fs, size);
                    node.data.asSlice(node.size, size - node.size).fill((byte) 0);
                    fs.counters.bytesWritten += zeroFill ? size - node.size : 0;
                    node.size = size;
                }
            }
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            synchronized (fs.lock) {
                check(true);
                write(MemorySegment.ofBuffer(source), position);
                source.position(source.limit());
            }
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            StoreFile.requireDirectAlignment(source, position);
            synchronized (fs.lock) {
                check(true);
                write(source, position);
            }
        }

        private void write(MemorySegment source, long position) throws IOException {
            long end = position + source.byteSize();
            if (end > node.size) {
                fs.reserve(node, end);
                node.allocate(fs, end);
                if (position > node.size) {
                    node.data.asSlice(node.size, position - node.size).fill((byte) 0);
                }
                node.size = end;
            }
            MemorySegment.copy(source, 0, node.data, position, source.byteSize());
            fs.counters.bytesWritten += source.byteSize();
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            synchronized (fs.lock) {
                check(true);
                long end = Math.min(offset + length, node.size);
                if (end > offset) {
                    node.data.asSlice(offset, end - offset).fill((byte) 0);
                    fs.counters.bytesWritten += end - offset;
                }
            }
        }

        /**
         * The most a file system may skip: the start of the first page holding a non-zero byte (a real one may
         * answer earlier, for pages of zeros it wrote), so a store is tested against the answer that lets it
         * skip the most.
         */
        @Override
        public long nextData(long offset) throws IOException {
            synchronized (fs.lock) {
                check(false);
                for (long page = offset / PAGE_BYTES * PAGE_BYTES; page < node.size; page += PAGE_BYTES) {
                    long from = Math.max(page, offset);
                    long to = Math.min(page + PAGE_BYTES, node.size);
                    MemorySegment bytes = node.data.asSlice(from, to - from);
                    if (bytes.mismatch(ZEROS.asSlice(0, to - from)) >= 0) {
                        return from;
                    }
                }
                return -1;
            }
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            synchronized (fs.lock) {
                check(false);
                if (position >= node.size) {
                    return -1;
                }
                int length = (int) Math.min(target.remaining(), node.size - position);
                MemorySegment.copy(node.data, position, MemorySegment.ofBuffer(target), 0, length);
                target.position(target.position() + length);
                return length;
            }
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            ByteBuffer bytes;
            synchronized (fs.lock) {
                check(false);
                if (position + count > node.size) {
                    throw new EOFException(path + " ends at " + node.size + ", before " + (position + count));
                }
                bytes = ByteBuffer.allocate(Math.toIntExact(count));
                MemorySegment.copy(node.data, position, MemorySegment.ofBuffer(bytes), 0, count);
            }
            while (bytes.hasRemaining()) {
                target.write(bytes);
            }
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            synchronized (fs.lock) {
                check(false);
                return true;
            }
        }

        @Override
        public void force() throws IOException {
            synchronized (fs.lock) {
                check(false);
                byte[] image = new byte[Math.toIntExact(node.size)];
                MemorySegment.copy(node.data, ValueLayout.JAVA_BYTE, 0, image, 0, image.length);
                node.durable = image;
                node.durableSize = node.size;
                fs.counters.forces++;
                fs.counters.forcedFiles.add(path.toString());
            }
        }

        // "restricted": the view is given the caller's arena as its scope, so a store that uses a mapping after
        // closing its arena fails as it would on a real unmapped region; the memory itself stays owned here.
        @SuppressWarnings("restricted")
        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            synchronized (fs.lock) {
                check(mode == FileChannel.MapMode.READ_WRITE);
                if (offset < 0 || size < 0 || offset + size > node.size) {
                    throw new IOException("mapping [" + offset + ", " + (offset + size) + ") of " + path + " lies past"
                            + " its end (" + node.size + " bytes)");
                }
                node.mappings++;
                MemorySegment view = node.data.asSlice(offset, size).reinterpret(arena, unmapped -> {
                    synchronized (fs.lock) {
                        node.mappings--;
                    }
                });
                return mode == FileChannel.MapMode.READ_WRITE ? view : view.asReadOnly();
            }
        }

        @Override
        public void truncate(long size) throws IOException {
            synchronized (fs.lock) {
                check(true);
                if (size > node.size) {
                    fs.reserve(node, size);
                    node.allocate(fs, size);
                    node.data.asSlice(node.size, size - node.size).fill((byte) 0);
                }
                node.size = size;
            }
        }

        @Override
        public void close() {
            synchronized (fs.lock) {
                closed = true;
            }
        }
    }
}
