package io.sluice.bench.peers;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Finds the TCP sockets this process listens on that are bound beyond the loopback interface, from
 * {@code /proc/net/tcp}, {@code /proc/net/tcp6} and this process's open descriptors. Linux only. Stateless.
 */
public final class Listeners {

    private static final String LISTEN = "0A";

    private Listeners() {
    }

    /** @return "address:port" of every listening socket of this process not bound to 127.0.0.0/8 or ::1 */
    public static List<String> beyondLoopback() throws IOException {
        Set<String> ownInodes = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String link = Files.readSymbolicLink(fd).toString();
                    if (link.startsWith("socket:[")) {
                        ownInodes.add(link.substring(8, link.length() - 1));
                    }
                } catch (IOException e) {
                    // The descriptor closed while we looked: not a listener of ours any more.
                }
            }
        }
        List<String> found = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path file = Path.of(table);
            if (!Files.exists(file)) {
                continue;
            }
            for (String line : Files.readAllLines(file).stream().skip(1).toList()) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length < 10 || !fields[3].equals(LISTEN) || !ownInodes.contains(fields[9])) {
                    continue;
                }
                String[] local = fields[1].split(":");
                if (!loopback(local[0])) {
                    found.add(local[0] + ":" + Integer.parseInt(local[1], 16));
                }
            }
        }
        return found;
    }

    /** @param hex the kernel's hex address: 8 digits (IPv4, little-endian words) or 32 (IPv6) */
    static boolean loopback(String hex) {
        if (hex.length() == 8) {
            // 127.x.y.z is stored with its first octet in the lowest byte: the last two hex digits.
            return hex.endsWith("7F");
        }
        return hex.equals("00000000000000000000000001000000")
                || hex.startsWith("0000000000000000FFFF0000") && hex.endsWith("7F");
    }
}
