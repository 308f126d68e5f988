package io.sluice.store;

import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code sluice calibrate} measured on a store's disk, kept in the store directory as the text file
 * {@code calibration} (docs/format.md). The store reads it at open: reads larger than {@link
 * #readCrossoverBytes()} go positionally ({@code FileChannel.read} into a direct buffer) even from mapped
 * segments, because on that disk it measured cheaper than touching the mapping.
 *
 * @param readCrossoverBytes the smallest read unit at which positional reads beat mapped ones, or
 *     {@link Long#MAX_VALUE} if they never did
 * @param writeCrossoverBytes the smallest write unit at which {@code FileChannel.write} beat copying into a
 *     mapping, or {@link Long#MAX_VALUE} (reported for choosing a write path; the store does not act on it)
 * @param measuredMillis when it was measured, epoch ms
 */
public record Calibration(long readCrossoverBytes, long writeCrossoverBytes, long measuredMillis) {

    private static final Logger LOG = LoggerFactory.getLogger(Calibration.class);

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "calibration";
    private static final String FORMAT = "1";

    /** Validates the fields. */
    public Calibration {
        if (readCrossoverBytes < 1 || writeCrossoverBytes < 1) {
            throw new IllegalArgumentException("crossovers must be 1 byte or more, were " + readCrossoverBytes + " and "
                    + writeCrossoverBytes);
        }
    }

    /** @return no calibration: every read of a mapped segment uses the mapping */
    public static Calibration none() {
        return new Calibration(Long.MAX_VALUE, Long.MAX_VALUE, 0);
    }

    /**
     * Reads the store directory's calibration. A missing file means none; a damaged one is reported in the
     * log, by name, and ignored (it holds no data, only a tuning hint).
     *
     * @param storeDirectory the store's directory
     * @return the calibration, or {@link #none()}
     */
    public static Calibration read(Path storeDirectory) {
        return read(FileIO.DEFAULT, storeDirectory);
    }

    /**
     * Reads the store directory's calibration through a file seam (see {@link #read(Path)}).
     *
     * @param io the file seam
     * @param storeDirectory the store's directory
     * @return the calibration, or {@link #none()}
     */
    public static Calibration read(FileIO io, Path storeDirectory) {
        Path path = storeDirectory.resolve(FILE_NAME);
        try {
            if (!io.exists(path)) {
                return none();
            }
            Properties properties = new Properties();
            properties.load(new StringReader(new String(FileTree.readAll(io, path), StandardCharsets.UTF_8)));
            if (!FORMAT.equals(properties.getProperty("format"))) {
                throw new IllegalArgumentException("unknown format " + properties.getProperty("format"));
            }
            return new Calibration(parse(properties, "readCrossoverBytes"), parse(properties, "writeCrossoverBytes"),
                    Long.parseLong(properties.getProperty("measuredMillis", "0").trim()));
        } catch (IOException | RuntimeException e) {
            LOG.warn("ignoring calibration file {}: {}; run sluice calibrate again", path, e.getMessage());
            return none();
        }
    }

    private static long parse(Properties properties, String key) {
        String value = properties.getProperty(key);
        if (value == null) {
            throw new IllegalArgumentException("missing " + key);
        }
        return "never".equals(value.trim()) ? Long.MAX_VALUE : Long.parseLong(value.trim());
    }

    /** Writes this calibration into the store directory atomically (temp file, fsync, rename). */
    public void write(Path storeDirectory) throws IOException {
        String text = "# measured by sluice calibrate; reads of more bytes than readCrossoverBytes go positionally\n"
                + "format=" + FORMAT + "\n"
                + "readCrossoverBytes=" + describe(readCrossoverBytes) + "\n"
                + "writeCrossoverBytes=" + describe(writeCrossoverBytes) + "\n"
                + "measuredMillis=" + measuredMillis + "\n";
        AtomicFile.replace(FileIO.DEFAULT, storeDirectory, FILE_NAME,
                ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
    }

    private static String describe(long bytes) {
        return bytes == Long.MAX_VALUE ? "never" : Long.toString(bytes);
    }
}
