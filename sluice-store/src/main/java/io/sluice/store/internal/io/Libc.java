package io.sluice.store.internal.io;

import io.sluice.store.io.StoreIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The C library's file calls, through FFM, each returning its result or throwing a {@link StoreIOException}
 * that carries {@code errno}. Unlike {@code FileChannel}, these calls do not react to {@link Thread#interrupt}:
 * an interrupted caller can never close a descriptor that other threads share. Linux on x86-64 and AArch64
 * only ({@link #AVAILABLE}); elsewhere the store uses {@code FileChannel}.
 *
 * <p>Thread-safe (the calls are; descriptors are the caller's to manage).
 */
// "restricted": linking native functions is what this class is for; the launchers pass --enable-native-access.
@SuppressWarnings("restricted")
public final class Libc {

    /** Opened for reading only. */
    public static final int O_RDONLY = 0;
    /** Opened for reading and writing. */
    public static final int O_RDWR = 2;
    /** Create if absent. */
    public static final int O_CREAT = 0x40;
    /** Close on exec. */
    public static final int O_CLOEXEC = 0x80000;
    /** Must be a directory (its value depends on the architecture). */
    public static final int O_DIRECTORY;
    /** Bypass the page cache (its value depends on the architecture). */
    public static final int O_DIRECT;
    /** Interrupted system call. */
    public static final int EINTR = 4;
    /** No such file or directory. */
    public static final int ENOENT = 2;
    /** File exists. */
    public static final int EEXIST = 17;
    /** Invalid argument (O_DIRECT refused, for one). */
    public static final int EINVAL = 22;
    /** Is a directory. */
    public static final int EISDIR = 21;
    /** Operation not supported. */
    public static final int EOPNOTSUPP = 95;
    /** fallocate: keep the file's size. */
    public static final int FALLOC_FL_KEEP_SIZE = 0x01;
    /** fallocate: make the range read as zeros. */
    public static final int FALLOC_FL_ZERO_RANGE = 0x10;
    /** mmap: readable. */
    public static final int PROT_READ = 1;
    /** mmap: writable. */
    public static final int PROT_WRITE = 2;
    /** mmap: shared with the file. */
    public static final int MAP_SHARED = 1;
    /** lseek: from the end. */
    public static final int SEEK_END = 2;
    /** lseek: to the next data at or after the offset. */
    public static final int SEEK_DATA = 3;
    /** No such device or address (lseek: no data past the offset). */
    public static final int ENXIO = 6;

    /** True when the calls could be linked on this platform. */
    public static final boolean AVAILABLE;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle PREAD;
    private static final MethodHandle PWRITE;
    private static final MethodHandle FDATASYNC;
    private static final MethodHandle FSYNC;
    private static final MethodHandle FTRUNCATE;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle LSEEK;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MKDIR;
    private static final MethodHandle UNLINK;
    private static final MethodHandle RMDIR;
    private static final MethodHandle RENAME;
    private static final MethodHandle STRERROR;
    private static final MethodHandle SYNCFS;

    static {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean arm = arch.equals("aarch64");
        O_DIRECTORY = arm ? 0x4000 : 0x10000;
        O_DIRECT = arm ? 0x10000 : 0x4000;
        MethodHandle[] handles = new MethodHandle[17];
        boolean linked = false;
        if (os.startsWith("linux") && (arm || arch.equals("amd64") || arch.equals("x86_64"))) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                ValueLayout i = ValueLayout.JAVA_INT;
                ValueLayout l = ValueLayout.JAVA_LONG;
                ValueLayout a = ValueLayout.ADDRESS;
                handles[0] = linker.downcallHandle(libc.find("open").orElseThrow(), FunctionDescriptor.of(i, a, i, i),
                        errno, Linker.Option.firstVariadicArg(2));
                handles[1] = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(i, i), errno);
                handles[2] = linker.downcallHandle(libc.find("pread").orElseThrow(),
                        FunctionDescriptor.of(l, i, a, l, l), errno);
                handles[3] = linker.downcallHandle(libc.find("pwrite").orElseThrow(),
                        FunctionDescriptor.of(l, i, a, l, l), errno);
                handles[4] = linker.downcallHandle(libc.find("fdatasync").orElseThrow(), FunctionDescriptor.of(i, i),
                        errno);
                handles[5] = linker.downcallHandle(libc.find("fsync").orElseThrow(), FunctionDescriptor.of(i, i), errno);
                handles[6] = linker.downcallHandle(libc.find("ftruncate").orElseThrow(), FunctionDescriptor.of(i, i, l),
                        errno);
                handles[7] = linker.downcallHandle(libc.find("fallocate").orElseThrow(),
                        FunctionDescriptor.of(i, i, i, l, l), errno);
                handles[8] = linker.downcallHandle(libc.find("lseek").orElseThrow(), FunctionDescriptor.of(l, i, l, i),
                        errno);
                handles[9] = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                        FunctionDescriptor.of(a, a, l, i, i, i, l), errno);
                handles[10] = linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(i, a, l),
                        errno);
                handles[11] = linker.downcallHandle(libc.find("mkdir").orElseThrow(), FunctionDescriptor.of(i, a, i),
                        errno);
                handles[12] = linker.downcallHandle(libc.find("unlink").orElseThrow(), FunctionDescriptor.of(i, a),
                        errno);
                handles[13] = linker.downcallHandle(libc.find("rmdir").orElseThrow(), FunctionDescriptor.of(i, a), errno);
                handles[14] = linker.downcallHandle(libc.find("rename").orElseThrow(), FunctionDescriptor.of(i, a, a),
                        errno);
                handles[15] = linker.downcallHandle(libc.find("strerror").orElseThrow(), FunctionDescriptor.of(a, i));
                handles[16] = linker.downcallHandle(libc.find("syncfs").orElseThrow(), FunctionDescriptor.of(i, i), errno);
                linked = true;
            } catch (RuntimeException | LinkageError e) {
                linked = false;
            }
        }
        AVAILABLE = linked;
        OPEN = handles[0];
        CLOSE = handles[1];
        PREAD = handles[2];
        PWRITE = handles[3];
        FDATASYNC = handles[4];
        FSYNC = handles[5];
        FTRUNCATE = handles[6];
        FALLOCATE = handles[7];
        LSEEK = handles[8];
        MMAP = handles[9];
        MUNMAP = handles[10];
        MKDIR = handles[11];
        UNLINK = handles[12];
        RMDIR = handles[13];
        RENAME = handles[14];
        STRERROR = handles[15];
        SYNCFS = handles[16];
    }

    private Libc() {
    }

    /** A failed call: its errno and a message naming the call, the file and the error. */
    private static StoreIOException failure(String call, Object what, int errno) {
        return new StoreIOException(call + " " + what + ": " + strerror(errno) + " (errno " + errno + ")", errno);
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** Per-thread space for errno, so the hot calls (pread, pwrite, sync) allocate nothing. */
    private static final ThreadLocal<MemorySegment> STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE));

    /** @return the C library's text for an error number */
    public static String strerror(int errno) {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "error";
        }
    }

    private static RuntimeException unexpected(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("native call failed", t);
    }

    /** @return a descriptor of {@code path} opened with {@code flags} (O_CLOEXEC is added) */
    public static int open(Path path, int flags) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment name = arena.allocateFrom(path.toString());
            while (true) {
                int fd = (int) OPEN.invokeExact(state, name, flags | O_CLOEXEC, 0644);
                if (fd >= 0) {
                    return fd;
                }
                int err = errno(state);
                if (err != EINTR) {
                    throw failure("open", path, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Closes a descriptor; errors are ignored (the data was forced before, or is not promised). */
    public static void close(int fd) {
        if (fd < 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) CLOSE.invokeExact(arena.allocate(CAPTURE), fd);
            assert ignored == 0 || ignored == -1;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Reads up to {@code target}'s size at {@code offset}. @return bytes read, 0 at end of file */
    public static long pread(int fd, MemorySegment target, long offset, Object what) throws StoreIOException {
        try {
            MemorySegment state = STATE.get();
            while (true) {
                long n = (long) PREAD.invokeExact(state, fd, target, target.byteSize(), offset);
                if (n >= 0) {
                    return n;
                }
                int err = errno(state);
                if (err != EINTR) {
                    throw failure("pread", what, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Writes all of {@code source} at {@code offset}. */
    public static void pwriteFully(int fd, MemorySegment source, long offset, Object what) throws StoreIOException {
        try {
            MemorySegment state = STATE.get();
            long done = 0;
            long length = source.byteSize();
            while (done < length) {
                long n = (long) PWRITE.invokeExact(state, fd, source.asSlice(done), length - done, offset + done);
                if (n >= 0) {
                    done += n;
                    continue;
                }
                int err = errno(state);
                if (err != EINTR) {
                    throw failure("pwrite", what, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** fdatasync, or fsync when {@code metadata}. Never retried after an error: the caller reports it. */
    public static void sync(int fd, boolean metadata, Object what) throws StoreIOException {
        try {
            MemorySegment state = STATE.get();
            while (true) {
                int rc = metadata ? (int) FSYNC.invokeExact(state, fd) : (int) FDATASYNC.invokeExact(state, fd);
                if (rc == 0) {
                    return;
                }
                int err = errno(state);
                if (err != EINTR) {
                    throw failure(metadata ? "fsync" : "fdatasync", what, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** syncfs: writes back and forces everything of the file system holding {@code fd}, reporting its errors. */
    public static void syncfs(int fd, Object what) throws StoreIOException {
        try {
            MemorySegment state = STATE.get();
            while (true) {
                if ((int) SYNCFS.invokeExact(state, fd) == 0) {
                    return;
                }
                int err = errno(state);
                if (err != EINTR) {
                    throw failure("syncfs", what, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** ftruncate. */
    public static void ftruncate(int fd, long size, Object what) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if ((int) FTRUNCATE.invokeExact(state, fd, size) != 0) {
                throw failure("ftruncate", what, errno(state));
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * fallocate.
     *
     * @return false if the file system does not support this mode (EOPNOTSUPP): the caller writes zeros
     */
    public static boolean fallocate(int fd, int mode, long offset, long length, Object what) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            while (true) {
                if ((int) FALLOCATE.invokeExact(state, fd, mode, offset, length) == 0) {
                    return true;
                }
                int err = errno(state);
                if (err == EOPNOTSUPP || (err == EINVAL && mode != 0)) {
                    return false;
                }
                if (err != EINTR) {
                    throw failure("fallocate", what, err);
                }
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * @return the next data at or after {@code offset} (lseek SEEK_DATA), -1 if there is none before the end,
     *     or {@code offset} itself where the file system cannot tell
     */
    public static long seekData(int fd, long offset, Object what) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            long at = (long) LSEEK.invokeExact(state, fd, offset, SEEK_DATA);
            if (at >= 0) {
                return at;
            }
            int err = errno(state);
            if (err == ENXIO) {
                return -1;
            }
            if (err == EINVAL || err == EOPNOTSUPP) {
                return offset;
            }
            throw failure("lseek(SEEK_DATA)", what, err);
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** @return the file's size (lseek to its end) */
    public static long size(int fd, Object what) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            long size = (long) LSEEK.invokeExact(state, fd, 0L, SEEK_END);
            if (size < 0) {
                throw failure("lseek", what, errno(state));
            }
            return size;
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * Maps {@code size} bytes of the file from {@code offset}, shared; the mapping is unmapped when {@code arena}
     * closes, and using it afterwards throws instead of faulting.
     */
    public static MemorySegment mmap(int fd, long offset, long size, boolean writable, Arena arena, Object what)
            throws StoreIOException {
        if (size == 0) {
            return MemorySegment.NULL.reinterpret(0, arena, null);
        }
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = call.allocate(CAPTURE);
            MemorySegment address = (MemorySegment) MMAP.invokeExact(state, MemorySegment.NULL, size,
                    writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, offset);
            if (address.address() == -1L) {
                throw failure("mmap", what, errno(state));
            }
            long start = address.address();
            return address.reinterpret(size, arena, mapped -> munmap(start, size));
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    private static void munmap(long address, long size) {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) MUNMAP.invokeExact(arena.allocate(CAPTURE), MemorySegment.ofAddress(address), size);
            assert ignored == 0;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** @return false if the directory already existed */
    public static boolean mkdir(Path path) throws StoreIOException {
        int err = pathCall(MKDIR, path, 0755);
        if (err == 0) {
            return true;
        }
        if (err == EEXIST) {
            return false;
        }
        throw failure("mkdir", path, err);
    }

    /** Removes a file or an empty directory. @return false if nothing was there */
    public static boolean remove(Path path) throws StoreIOException {
        int err = pathCall(UNLINK, path, -1);
        if (err == EISDIR || err == 1 /* EPERM: unlink of a directory on Linux */) {
            err = pathCall(RMDIR, path, -1);
        }
        if (err == 0) {
            return true;
        }
        if (err == ENOENT) {
            return false;
        }
        throw failure("unlink", path, err);
    }

    /** rename(2): atomic, replacing the target. */
    public static void rename(Path source, Path target) throws StoreIOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int rc = (int) RENAME.invokeExact(state, arena.allocateFrom(source.toString()),
                    arena.allocateFrom(target.toString()));
            if (rc != 0) {
                throw failure("rename", source + " -> " + target, errno(state));
            }
        } catch (StoreIOException e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** @return 0, or the errno of a call taking a path (and a mode, unless {@code mode} is negative) */
    private static int pathCall(MethodHandle call, Path path, int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment name = arena.allocateFrom(path.toString());
            int rc = mode < 0 ? (int) call.invokeExact(state, name) : (int) call.invokeExact(state, name, mode);
            return rc == 0 ? 0 : errno(state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }
}
