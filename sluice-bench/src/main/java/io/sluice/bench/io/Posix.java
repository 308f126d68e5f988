package io.sluice.bench.io;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * The few libc calls the experiments need beyond the JDK, through FFM: {@code posix_fadvise(DONTNEED)} to
 * evict a file from the page cache, and {@code mlock}/{@code munlock} to hold a mapping in memory.
 * Thread-safe (stateless).
 */
// "restricted": linking native functions is what this class is for; the launcher passes
// --enable-native-access so the JVM does not warn at run time either.
@SuppressWarnings("restricted")
public final class Posix {

    private static final int O_RDONLY = 0;
    private static final int POSIX_FADV_DONTNEED = 4;
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FDATASYNC;
    private static final MethodHandle FADVISE;
    private static final MethodHandle MLOCK;
    private static final MethodHandle MUNLOCK;
    private static final MethodHandle STRERROR;

    static {
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        OPEN = linker.downcallHandle(libc.find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), errno);
        CLOSE = linker.downcallHandle(libc.find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        FDATASYNC = linker.downcallHandle(libc.find("fdatasync").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno);
        // posix_fadvise returns the error number instead of setting errno.
        FADVISE = linker.downcallHandle(libc.find("posix_fadvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        FunctionDescriptor range = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG);
        MLOCK = linker.downcallHandle(libc.find("mlock").orElseThrow(), range, errno);
        MUNLOCK = linker.downcallHandle(libc.find("munlock").orElseThrow(), range, errno);
        STRERROR = linker.downcallHandle(libc.find("strerror").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    }

    private Posix() {
    }

    /**
     * Writes the file's dirty pages to disk and drops all its pages from the page cache, so the next read
     * comes from the disk.
     *
     * @throws IOException if the file cannot be opened, synced or advised
     */
    public static void evict(Path file) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()), O_RDONLY);
            if (fd < 0) {
                throw new IOException("open " + file + ": " + message((int) ERRNO.get(state, 0L)));
            }
            try {
                if ((int) FDATASYNC.invokeExact(state, fd) != 0) {
                    throw new IOException("fdatasync " + file + ": " + message((int) ERRNO.get(state, 0L)));
                }
                int error = (int) FADVISE.invokeExact(fd, 0L, 0L, POSIX_FADV_DONTNEED);
                if (error != 0) {
                    throw new IOException("posix_fadvise(DONTNEED) " + file + ": " + message(error));
                }
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Locks the mapping's pages in memory (faulting them in). @throws IOException with the errno text */
    public static void mlock(MemorySegment mapping) throws IOException {
        lockCall(MLOCK, mapping, "mlock");
    }

    /** Undoes {@link #mlock}. @throws IOException with the errno text */
    public static void munlock(MemorySegment mapping) throws IOException {
        lockCall(MUNLOCK, mapping, "munlock");
    }

    private static void lockCall(MethodHandle call, MemorySegment mapping, String name) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int result = (int) call.invokeExact(state, mapping, mapping.byteSize());
            if (result != 0) {
                throw new IOException(name + " of " + mapping.byteSize() + " bytes: "
                        + message((int) ERRNO.get(state, 0L)));
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static String message(int errno) {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(256).getString(0) + " (errno " + errno + ")";
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
