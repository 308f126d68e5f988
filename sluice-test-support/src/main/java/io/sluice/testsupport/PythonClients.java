package io.sluice.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Python Kafka clients for tests: a virtual environment with the pinned {@link #CONFLUENT_KAFKA} and
 * {@link #KAFKA_PYTHON}, made from PyPI the first time it is needed and kept for later runs, and a way to run a
 * Python script (a resource on the class path, such as this module's {@code python/confluent_kafka_clients.py}) in
 * it against a broker.
 *
 * <p>The environment lives in {@code $XDG_CACHE_HOME/sluice/python} (by default {@code ~/.cache/sluice/python}),
 * in a directory named after the interpreter and the pinned versions, so another pin or another Python makes
 * another one. It is made under a file lock (test JVMs of other builds on the machine may want it at the same time)
 * and counts as made only once both clients import at their pinned versions. It needs {@code python3} on the
 * {@code PATH} with its {@code venv} module and pip, and PyPI (or the index pip is configured with) reachable on the
 * first run; without them {@link #environment()} fails with a message that says what is missing.
 */
public final class PythonClients {

    /** The pinned confluent-kafka (librdkafka's Python binding, which bundles the same librdkafka version). */
    public static final String CONFLUENT_KAFKA = "2.16.0";
    /** The pinned kafka-python (a Kafka client written in Python alone). */
    public static final String KAFKA_PYTHON = "3.0.12";

    private static final List<String> REQUIREMENTS = List.of("confluent-kafka==" + CONFLUENT_KAFKA,
            "kafka-python==" + KAFKA_PYTHON);
    /** Prints the interpreter's name, version and machine, which the environment's directory is named after. */
    private static final String DESCRIBE_INTERPRETER = "import platform, sys; v = sys.version_info; "
            + "print(f'{sys.implementation.name}{v.major}.{v.minor}.{v.micro}-{platform.machine()}')";
    /** Exits 0 only if both clients import at their pinned versions. */
    private static final String CHECK_CLIENTS = "import confluent_kafka, kafka, sys; "
            + "sys.exit(0 if confluent_kafka.__version__ == '" + CONFLUENT_KAFKA + "' and kafka.__version__ == '"
            + KAFKA_PYTHON + "' else 1)";
    private static final Duration MAKE_VENV_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration PIP_TIMEOUT = Duration.ofMinutes(15);
    private static final Duration CHECK_TIMEOUT = Duration.ofMinutes(1);

    /** The environment's python, once this JVM has found or made it. */
    private static Path python;
    /** Why the environment could not be made, once this JVM has tried and failed: not tried again. */
    private static String failure;

    private PythonClients() {
    }

    /**
     * What a script run gave.
     *
     * @param exitCode the script's exit code, or -1 if it was killed for running too long
     * @param output what it wrote to its standard output and error, interleaved
     * @param took how long it ran
     * @param timedOut whether it was killed for running longer than it was given
     */
    public record Result(int exitCode, String output, Duration took, boolean timedOut) {

        /** @return a line for an assertion's description: how the script ended, then its output */
        public String describe() {
            return (timedOut ? "killed after " + took.toSeconds() + " s" : "exit code " + exitCode) + "; output:\n"
                    + output;
        }
    }

    /**
     * Runs a Python script, a resource on the class path, in the clients' environment (made first if needed).
     *
     * @param resource the script's resource name, for example {@code python/confluent_kafka_clients.py}
     * @param timeout how long it may run before it is killed
     * @param args its arguments
     * @return how it ended and what it wrote
     * @throws IOException if the script cannot be read or started
     * @throws IllegalStateException if the environment cannot be made (no python3, no venv module, no PyPI)
     * @throws InterruptedException if interrupted while waiting for it
     */
    public static Result run(String resource, Duration timeout, String... args)
            throws IOException, InterruptedException {
        Path interpreter = environment();
        Path script = copyOut(resource);
        try {
            List<String> command = new ArrayList<>(List.of(interpreter.toString(), script.toString()));
            command.addAll(List.of(args));
            Result result = exec(command, timeout);
            System.out.printf("python: %s %s: %s in %.1f s%n", resource, String.join(" ", args),
                    result.timedOut() ? "killed" : "exit code " + result.exitCode(), result.took().toMillis() / 1000.0);
            return result;
        } finally {
            Files.deleteIfExists(script);
        }
    }

    /**
     * Finds the clients' environment, or makes it: once per JVM, under a lock that other processes respect.
     *
     * @return the environment's python interpreter
     * @throws IllegalStateException if it cannot be made, saying what is missing
     * @throws IOException if its directory cannot be written
     * @throws InterruptedException if interrupted while waiting for python or pip
     */
    public static synchronized Path environment() throws IOException, InterruptedException {
        if (python != null) {
            return python;
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        try {
            python = findOrMake();
            return python;
        } catch (IllegalStateException e) {
            failure = e.getMessage();
            throw e;
        }
    }

    private static Path findOrMake() throws IOException, InterruptedException {
        long started = System.nanoTime();
        String interpreter = describeInterpreter();
        Path root = cacheRoot();
        Files.createDirectories(root);
        String name = interpreter + "-" + String.join("-", REQUIREMENTS).replace("==", "-");
        Path venv = root.resolve(name);
        Path bin = venv.resolve("bin").resolve("python");
        Path ready = venv.resolve("sluice-ready");
        try (FileChannel lockFile = FileChannel.open(root.resolve(name + ".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            FileLock lock = lockFile.lock();
            try {
                boolean made = false;
                if (!Files.exists(ready) || !clientsImport(bin)) {
                    make(venv, bin);
                    Files.writeString(ready, String.join("\n", REQUIREMENTS) + "\n");
                    made = true;
                }
                System.out.printf("python: %s %s in %.1f s%n", made ? "made" : "found", venv,
                        (System.nanoTime() - started) / 1e9);
            } finally {
                lock.release();
            }
        }
        return bin;
    }

    /** @return whether both clients import at their pinned versions in the environment of {@code bin} */
    private static boolean clientsImport(Path bin) throws InterruptedException {
        try {
            return exec(List.of(bin.toString(), "-c", CHECK_CLIENTS), CHECK_TIMEOUT).exitCode() == 0;
        } catch (IOException e) {
            return false; // no interpreter there (any more)
        }
    }

    /** Makes the environment afresh in {@code venv}: a venv, the pinned clients from PyPI, and a check of both. */
    private static void make(Path venv, Path bin) throws IOException, InterruptedException {
        deleteTree(venv);
        Result made = exec(List.of("python3", "-m", "venv", venv.toString()), MAKE_VENV_TIMEOUT);
        if (made.exitCode() != 0) {
            throw new IllegalStateException("python3 -m venv " + venv + " failed (" + tail(made)
                    + ")\nThe Python client tests need python3 with its venv module and pip; Debian and Ubuntu ship"
                    + " them apart: apt-get install python3-venv python3-pip");
        }
        List<String> pip = new ArrayList<>(List.of(bin.toString(), "-m", "pip", "install", "--no-input",
                "--disable-pip-version-check"));
        pip.addAll(REQUIREMENTS);
        Result installed = exec(pip, PIP_TIMEOUT);
        if (installed.exitCode() != 0) {
            throw new IllegalStateException("pip could not install " + String.join(" ", REQUIREMENTS) + " into "
                    + venv + " (" + tail(installed) + ")\nThe Python client tests fetch these from PyPI"
                    + " on their first run: PyPI (or the index pip is configured with) must be reachable");
        }
        Result checked = exec(List.of(bin.toString(), "-c", CHECK_CLIENTS), CHECK_TIMEOUT);
        if (checked.exitCode() != 0) {
            throw new IllegalStateException("the clients installed into " + venv + " do not import at their pinned"
                    + " versions " + REQUIREMENTS + " (" + tail(checked) + ")");
        }
    }

    /** @return the interpreter's name, version and machine, e.g. {@code cpython3.11.7-x86_64} */
    private static String describeInterpreter() throws InterruptedException {
        Result described;
        try {
            described = exec(List.of("python3", "-c", DESCRIBE_INTERPRETER), CHECK_TIMEOUT);
        } catch (IOException e) {
            throw new IllegalStateException("the Python client tests need python3 on the PATH (with its venv module"
                    + " and pip) and found none (" + e.getMessage() + "); install it, on Debian or Ubuntu with"
                    + " apt-get install python3 python3-venv python3-pip", e);
        }
        String name = described.output().strip();
        if (described.exitCode() != 0 || !name.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalStateException("python3 could not describe itself (" + described.describe().strip()
                    + ")");
        }
        return name;
    }

    /** @return how a command ended and the last lines of its output, for a failure's message */
    private static String tail(Result result) {
        String described = result.describe().strip();
        return described.length() <= 4_000 ? described : "..." + described.substring(described.length() - 4_000);
    }

    private static Path cacheRoot() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path cache = xdg != null && !xdg.isBlank() ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".cache");
        return cache.resolve("sluice").resolve("python");
    }

    /** Copies a class path resource out to a file of its own, which the caller deletes. */
    private static Path copyOut(String resource) throws IOException {
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("no resource " + resource + " on the class path");
            }
            String file = resource.substring(resource.lastIndexOf('/') + 1);
            Path script = Files.createTempFile("sluice-", "-" + file);
            Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
            return script;
        }
    }

    /**
     * Runs a command with its output (standard output and error) in a file, killing it and its children if it runs
     * past {@code timeout}.
     */
    private static Result exec(List<String> command, Duration timeout) throws IOException, InterruptedException {
        Path output = Files.createTempFile("sluice-python-", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            builder.environment().put("PYTHONUNBUFFERED", "1");
            builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
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

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
