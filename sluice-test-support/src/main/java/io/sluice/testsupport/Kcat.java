package io.sluice.testsupport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * kcat (formerly kafkacat), the command-line producer and consumer built on librdkafka, for tests: the machine's
 * {@code kcat} (or {@code kafkacat}) on the {@code PATH}, run with arguments and standard input. It is not built or
 * fetched here: Debian and Ubuntu ship it ({@code apt-get install kcat}, which {@code .ci/run} does when it is
 * missing); {@link #available()} says whether there is one, so a test can be skipped, saying so, on a machine
 * without it. The librdkafka it links is the system's, often older than confluent-kafka's, which is the point.
 *
 * <p>Thread-safety: the methods may be called from any thread; the command is looked for once per JVM.
 */
public final class Kcat {

    /** What a test skipped for want of kcat says. */
    public static final String NO_KCAT = "the kcat tests need kcat (or kafkacat) on the PATH and found none; on"
            + " Debian or Ubuntu: apt-get install kcat";

    private static final Pattern LIBRDKAFKA = Pattern.compile("librdkafka (\\d+)\\.(\\d+)\\.(\\d+)");
    private static final Duration VERSION_TIMEOUT = Duration.ofSeconds(30);

    /** The command found and the librdkafka version it reports, once this JVM has looked; empty if none. */
    private static Optional<Found> found;

    private Kcat() {
    }

    private record Found(String command, int[] librdkafka) {
    }

    /**
     * What a run gave.
     *
     * @param exitCode kcat's exit code, or -1 if it was killed for running too long
     * @param output what it wrote to its standard output
     * @param errors what it wrote to its standard error (librdkafka's log lines, kcat's "% ERROR: ..." lines)
     * @param timedOut whether it was killed for running longer than it was given
     */
    public record Result(int exitCode, String output, String errors, boolean timedOut) {

        /** @return a line for an assertion's description: how kcat ended, then what it wrote */
        public String describe() {
            return (timedOut ? "killed" : "exit code " + exitCode) + "; stdout:\n" + output + "\nstderr:\n" + errors;
        }
    }

    /**
     * @return true if this machine has kcat
     * @throws InterruptedException if interrupted while asking kcat its version
     */
    public static synchronized boolean available() throws InterruptedException {
        return find().isPresent();
    }

    /**
     * @return the version of the librdkafka kcat links, as {major, minor, patch}
     * @throws IllegalStateException if there is no kcat
     * @throws InterruptedException if interrupted while asking kcat its version
     */
    public static synchronized int[] librdkafka() throws InterruptedException {
        return find().orElseThrow(() -> new IllegalStateException(NO_KCAT)).librdkafka().clone();
    }

    /**
     * Runs kcat with {@code input} as its standard input.
     *
     * @param timeout how long it may run before it is killed
     * @param input its standard input ("" for none)
     * @param args its arguments
     * @return how it ended and what it wrote
     * @throws IOException if it cannot be started
     * @throws IllegalStateException if there is no kcat
     * @throws InterruptedException if interrupted while waiting for it
     */
    public static Result run(Duration timeout, String input, String... args) throws IOException, InterruptedException {
        String command;
        synchronized (Kcat.class) {
            command = find().orElseThrow(() -> new IllegalStateException(NO_KCAT)).command();
        }
        List<String> all = new ArrayList<>(List.of(command));
        all.addAll(List.of(args));
        long started = System.nanoTime();
        Result result = exec(all, input, timeout);
        System.out.printf("kcat %s: %s in %.1f s%n", String.join(" ", args),
                result.timedOut() ? "killed" : "exit code " + result.exitCode(), (System.nanoTime() - started) / 1e9);
        return result;
    }

    private static Optional<Found> find() throws InterruptedException {
        if (found == null) {
            found = Optional.empty();
            for (String command : List.of("kcat", "kafkacat")) {
                try {
                    Result version = exec(List.of(command, "-V"), "", VERSION_TIMEOUT);
                    Matcher matcher = LIBRDKAFKA.matcher(version.output() + version.errors());
                    if (version.exitCode() == 0 && matcher.find()) {
                        found = Optional.of(new Found(command, new int[] {Integer.parseInt(matcher.group(1)),
                                Integer.parseInt(matcher.group(2)), Integer.parseInt(matcher.group(3))}));
                        break;
                    }
                } catch (IOException e) {
                    // no such command
                }
            }
        }
        return found;
    }

    private static Result exec(List<String> command, String input, Duration timeout)
            throws IOException, InterruptedException {
        Path in = Files.createTempFile("sluice-kcat-", ".in");
        Path out = Files.createTempFile("sluice-kcat-", ".out");
        Path err = Files.createTempFile("sluice-kcat-", ".err");
        try {
            Files.writeString(in, input);
            Process process = new ProcessBuilder(command).redirectInput(in.toFile()).redirectOutput(out.toFile())
                    .redirectError(err.toFile()).start();
            boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!exited) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
            return new Result(exited ? process.exitValue() : -1, Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8), !exited);
        } finally {
            for (Path file : List.of(in, out, err)) {
                Files.deleteIfExists(file);
            }
        }
    }
}
