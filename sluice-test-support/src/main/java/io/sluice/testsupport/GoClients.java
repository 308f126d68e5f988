package io.sluice.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The Go Kafka client franz-go for tests: this module's program {@code go/franzgo} (its own {@code go.mod} pins
 * {@link #FRANZ_GO}), built with the machine's Go the first time it is needed and kept for later runs, and a way to
 * run it against a broker.
 *
 * <p>The program is built in {@code $XDG_CACHE_HOME/sluice/go} (by default {@code ~/.cache/sluice/go}), in a directory
 * named after a digest of its sources and the Go version, so a changed program or another Go builds again. The build
 * runs under a file lock (test JVMs of other builds on the machine may want it at the same time) with
 * {@code GOFLAGS=-mod=mod}, so Go fetches the pinned modules through its module proxy on the first run (into its own
 * module cache) and checks them against the program's {@code go.sum}. It needs {@code go} on the {@code PATH} (or in
 * {@code $GOROOT/bin} or {@code /usr/local/go/bin}); {@link #available()} says whether there is one, so a test can be
 * skipped on a machine without Go. Without the module proxy the first build fails with Go's message.
 *
 * <p>Thread-safety: the methods may be called from any thread; the build happens once per JVM.
 */
public final class GoClients {

    /** The franz-go version the program's {@code go.mod} pins. */
    public static final String FRANZ_GO = "v1.22.3";
    /** What a test skipped for want of Go says. */
    public static final String NO_GO = "the franz-go client tests need Go (go on the PATH, or in $GOROOT/bin or"
            + " /usr/local/go/bin) and found none; install Go 1.26 or newer to run them";

    private static final String PROGRAM = "go/franzgo";
    private static final List<String> SOURCES = List.of("go.mod", "go.sum", "main.go", "eos.go", "compacted.go",
            "secure.go");
    private static final Duration VERSION_TIMEOUT = Duration.ofMinutes(1);
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(10);

    /** The go command found, once this JVM has looked; empty if there is none. */
    private static Optional<Go> go;
    /** The program built, once this JVM has built it. */
    private static Path binary;
    /** Why the build failed, once this JVM has tried and failed: not tried again. */
    private static String failure;

    private GoClients() {
    }

    /** A go command and what {@code go version} says of it, e.g. {@code go1.26.8 linux/amd64}. */
    private record Go(String command, String version) {
    }

    /**
     * What a program run gave.
     *
     * @param exitCode the program's exit code, or -1 if it was killed for running too long
     * @param output what it wrote to its standard output and error, interleaved
     * @param took how long it ran
     * @param timedOut whether it was killed for running longer than it was given
     */
    public record Result(int exitCode, String output, Duration took, boolean timedOut) {

        /** @return a line for an assertion's description: how the program ended, then its output */
        public String describe() {
            return (timedOut ? "killed after " + took.toSeconds() + " s" : "exit code " + exitCode) + "; output:\n"
                    + output;
        }
    }

    /**
     * Whether this machine has Go: a {@code go} command that answers {@code go version}.
     *
     * @return true if the program can be built here
     * @throws InterruptedException if interrupted while asking go its version
     */
    public static synchronized boolean available() throws InterruptedException {
        return findGo().isPresent();
    }

    /**
     * Runs the franz-go program (built first if needed) with a check and its arguments, such as
     * {@code transactions --bootstrap 127.0.0.1:9092}.
     *
     * @param timeout how long it may run before it is killed
     * @param args the check and its arguments
     * @return how it ended and what it wrote
     * @throws IOException if the program cannot be started
     * @throws IllegalStateException if there is no Go or the program cannot be built, saying why
     * @throws InterruptedException if interrupted while waiting for it
     */
    public static Result run(Duration timeout, String... args) throws IOException, InterruptedException {
        Path program = program();
        List<String> command = new ArrayList<>(List.of(program.toString()));
        command.addAll(List.of(args));
        Result result = exec(command, null, timeout);
        System.out.printf("go: franzgo %s: %s in %.1f s%n", String.join(" ", args),
                result.timedOut() ? "killed" : "exit code " + result.exitCode(), result.took().toMillis() / 1000.0);
        return result;
    }

    /**
     * Finds the built program, or builds it: once per JVM, under a lock that other processes respect.
     *
     * @return the program's executable
     * @throws IllegalStateException if there is no Go or the build fails, saying why
     * @throws IOException if its directory cannot be written
     * @throws InterruptedException if interrupted while waiting for the build
     */
    public static synchronized Path program() throws IOException, InterruptedException {
        if (binary != null) {
            return binary;
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        Go found = findGo().orElseThrow(() -> new IllegalStateException(NO_GO));
        try {
            binary = findOrBuild(found);
            return binary;
        } catch (IllegalStateException e) {
            failure = e.getMessage();
            throw e;
        }
    }

    private static Path findOrBuild(Go found) throws IOException, InterruptedException {
        long started = System.nanoTime();
        List<byte[]> sources = new ArrayList<>();
        for (String source : SOURCES) {
            sources.add(resource(PROGRAM + "/" + source));
        }
        String name = "franzgo-" + digest(found.version(), sources);
        Path root = cacheRoot();
        Files.createDirectories(root);
        Path dir = root.resolve(name);
        Path executable = dir.resolve("franzgo");
        Path ready = dir.resolve("sluice-ready");
        try (FileChannel lockFile = FileChannel.open(root.resolve(name + ".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            FileLock lock = lockFile.lock();
            try {
                boolean built = false;
                if (!Files.exists(ready) || !Files.isExecutable(executable)) {
                    build(found, dir, sources);
                    Files.writeString(ready, found.version() + "\n");
                    built = true;
                }
                System.out.printf("go: %s %s (franz-go %s, %s) in %.1f s%n", built ? "built" : "found", executable,
                        FRANZ_GO, found.version(), (System.nanoTime() - started) / 1e9);
            } finally {
                lock.release();
            }
        }
        return executable;
    }

    /** Writes the sources into {@code dir} and builds them there with {@code go build}. */
    private static void build(Go found, Path dir, List<byte[]> sources) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        for (int i = 0; i < SOURCES.size(); i++) {
            Path file = dir.resolve(SOURCES.get(i));
            Path written = Files.createTempFile(dir, SOURCES.get(i), ".part");
            Files.write(written, sources.get(i));
            Files.move(written, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        Result built = exec(List.of(found.command(), "build", "-o", "franzgo", "."), dir, BUILD_TIMEOUT);
        if (built.exitCode() != 0) {
            throw new IllegalStateException("go build of " + PROGRAM + " in " + dir + " failed (" + tail(built)
                    + ")\nThe first build fetches franz-go " + FRANZ_GO + " and its dependencies through the Go"
                    + " module proxy (GOPROXY), which must be reachable then");
        }
    }

    /** @return the go command and its version, looked for once per JVM */
    private static Optional<Go> findGo() throws InterruptedException {
        if (go == null) {
            go = Optional.empty();
            for (String command : candidates()) {
                Optional<Go> answered = version(command);
                if (answered.isPresent()) {
                    go = answered;
                    break;
                }
            }
        }
        return go;
    }

    private static List<String> candidates() {
        List<String> commands = new ArrayList<>(List.of("go"));
        String goroot = System.getenv("GOROOT");
        if (goroot != null && !goroot.isBlank()) {
            commands.add(Path.of(goroot, "bin", "go").toString());
        }
        commands.add("/usr/local/go/bin/go");
        return commands;
    }

    /** @return the command and what {@code go version} says, if it runs and says it */
    private static Optional<Go> version(String command) throws InterruptedException {
        try {
            Result answered = exec(List.of(command, "version"), null, VERSION_TIMEOUT);
            String out = answered.output().strip();
            if (answered.exitCode() != 0 || !out.startsWith("go version ")) {
                return Optional.empty();
            }
            return Optional.of(new Go(command, out.substring("go version ".length())));
        } catch (IOException e) {
            return Optional.empty(); // no such command
        }
    }

    /** @return 16 hex digits of a SHA-256 over the Go version and the sources, so either changing builds anew */
    private static String digest(String goVersion, List<byte[]> sources) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(goVersion.getBytes(StandardCharsets.UTF_8));
            for (byte[] source : sources) {
                sha.update((byte) 0);
                sha.update(source);
            }
            return HexFormat.of().formatHex(sha.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    private static byte[] resource(String name) throws IOException {
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try (InputStream in = loader.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException("no resource " + name + " on the class path");
            }
            return in.readAllBytes();
        }
    }

    private static Path cacheRoot() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path cache = xdg != null && !xdg.isBlank() ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".cache");
        return cache.resolve("sluice").resolve("go");
    }

    /** @return how a command ended and the last lines of its output, for a failure's message */
    private static String tail(Result result) {
        String described = result.describe().strip();
        return described.length() <= 4_000 ? described : "..." + described.substring(described.length() - 4_000);
    }

    /**
     * Runs a command (in {@code dir}, or the current directory if null) with its output (standard output and error)
     * in a file, killing it and its children if it runs past {@code timeout}.
     */
    private static Result exec(List<String> command, Path dir, Duration timeout)
            throws IOException, InterruptedException {
        Path output = Files.createTempFile("sluice-go-", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            if (dir != null) {
                builder.directory(dir.toFile());
            }
            // The program's go.sum pins what it builds with; -mod=mod lets go fill in the module cache from the proxy.
            builder.environment().put("GOFLAGS", "-mod=mod");
            long started = System.nanoTime();
            Process process = builder.start();
            boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!exited) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            String text = new String(Files.readAllBytes(output), StandardCharsets.UTF_8);
            return new Result(exited ? process.exitValue() : -1, text, took, !exited);
        } finally {
            Files.deleteIfExists(output);
        }
    }
}
