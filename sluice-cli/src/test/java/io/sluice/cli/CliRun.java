package io.sluice.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Runs the CLI in process (picocli through {@link Main#run}, with stdin, stdout and stderr swapped); plus a
 * fingerprint of a store directory tree.
 */
record CliRun(int exit, String out, String err) {

    static CliRun run(String stdin, String... args) {
        return run(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), null, args);
    }

    /**
     * @param stdin what the command reads as standard input
     * @param stdoutTap if not null, also receives every byte written to stdout, before it is captured (it may
     *     block, as a slow reader at the end of a pipe would)
     */
    static CliRun run(InputStream stdin, OutputStream stdoutTap, String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        InputStream oldIn = System.in;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        OutputStream sink = stdoutTap == null ? out : new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                stdoutTap.write(b);
                out.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                stdoutTap.write(b, off, len);
                out.write(b, off, len);
            }
        };
        try {
            System.setOut(new PrintStream(sink, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            System.setIn(stdin);
            int exit = Main.run(args);
            return new CliRun(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
            System.setIn(oldIn);
        }
    }

    /**
     * @return every file and directory under {@code root}, by relative path: "dir" for a directory, else its
     *     size, modification time and SHA-256 (so any creation, deletion or change shows as a difference)
     */
    static Map<String, String> fingerprint(Path root) {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.toList()) {
                String name = root.relativize(path).toString();
                if (Files.isDirectory(path)) {
                    files.put(name, "dir");
                } else {
                    MessageDigest sha = MessageDigest.getInstance("SHA-256");
                    files.put(name, "size=" + Files.size(path) + " mtime=" + Files.getLastModifiedTime(path).toInstant()
                            + " sha256=" + HexFormat.of().formatHex(sha.digest(Files.readAllBytes(path))));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        return files;
    }
}
