package io.sluice.bench.lab;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The machine a result was measured on: CPU model, cores, RAM, kernel, the filesystem under the work
 * directory and its device, and the JDK. Read from {@code /proc} and the JDK. Immutable.
 */
public record Machine(String cpu, int cores, long memoryBytes, String kernel, String filesystem, String device,
                      String jdk) {

    /** Describes this machine, with the filesystem that holds {@code workDirectory} (or its nearest parent). */
    public static Machine describe(Path workDirectory) {
        String cpu = firstValue(Path.of("/proc/cpuinfo"), "model name").orElse(System.getProperty("os.arch"));
        long memory = firstValue(Path.of("/proc/meminfo"), "MemTotal")
                .map(v -> Long.parseLong(v.replace("kB", "").trim()) * 1024).orElse(-1L);
        String kernel = read(Path.of("/proc/sys/kernel/osrelease")).orElse(System.getProperty("os.version"));
        String filesystem = "unknown";
        String device = "unknown";
        try {
            FileStore store = Files.getFileStore(existingAncestor(workDirectory));
            filesystem = store.type();
            device = store.name();
        } catch (IOException e) {
            // Left as unknown: the figures are still valid, only less well described.
        }
        String jdk = System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " "
                + Runtime.version();
        return new Machine(cpu, Runtime.getRuntime().availableProcessors(), memory, kernel, filesystem, device, jdk);
    }

    /** @return the nearest existing directory at or above {@code path} */
    public static Path existingAncestor(Path path) {
        Path p = path.toAbsolutePath().normalize();
        while (p != null && !Files.exists(p)) {
            p = p.getParent();
        }
        return p == null ? Path.of("/") : p;
    }

    /** @return the fields as an ordered map, for JSON and reports */
    public Map<String, Object> toMap() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("cpu", cpu);
        map.put("cores", cores);
        map.put("memoryBytes", memoryBytes);
        map.put("kernel", kernel);
        map.put("filesystem", filesystem);
        map.put("device", device);
        map.put("jdk", jdk);
        return map;
    }

    /** @return one line for table headers */
    public String summary() {
        return String.format("%s, %d cores, %.1f GiB RAM, Linux %s, %s on %s, %s", cpu, cores,
                memoryBytes / (double) (1L << 30), kernel, filesystem, device, jdk);
    }

    private static java.util.Optional<String> read(Path file) {
        try {
            return java.util.Optional.of(Files.readString(file).trim());
        } catch (IOException e) {
            return java.util.Optional.empty();
        }
    }

    private static java.util.Optional<String> firstValue(Path file, String key) {
        try {
            List<String> lines = Files.readAllLines(file);
            for (String line : lines) {
                int colon = line.indexOf(':');
                if (colon > 0 && line.substring(0, colon).trim().equals(key)) {
                    return java.util.Optional.of(line.substring(colon + 1).trim());
                }
            }
        } catch (IOException e) {
            // Not Linux, or /proc hidden: fall back to the JDK's view.
        }
        return java.util.Optional.empty();
    }
}
