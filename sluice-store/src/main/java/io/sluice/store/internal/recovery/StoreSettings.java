package io.sluice.store.internal.recovery;

import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreCorruptedException;
import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The settings that belong to a store rather than to whoever opens it: the segment size and the retention
 * policy. Saved at creation, and again when an opener overrides them ({@code StoreConfig.overrideStoreSettings});
 * every other open uses them, so a command that opens the store to read or to append a few messages never
 * applies another retention policy than the owner's. Replaced atomically. Little-endian:
 *
 * <pre>
 * offset size field
 *   0     4   magic               0x534C5354 ("SLST")
 *   4     2   version             1
 *   6     2   flags               bit 0: consumer positions do not hold retention (0 in files written before
 *                                 the flag, which therefore keep their positions holding); other bits 0
 *   8     8   segmentSizeBytes
 *  16     8   retentionMillis
 *  24     8   retentionBytes
 *  32     8   diskCleanRatio      IEEE 754 double
 *  40     8   diskEmergencyRatio  IEEE 754 double
 *  48     8   diskHardRatio       IEEE 754 double
 *  56     8   checkIntervalMillis
 *  64     4   crc                 CRC32C of bytes [0, 64)
 * </pre>
 *
 * @param segmentSizeBytes the size of new segments (the largest, where segments grow)
 * @param retention the retention policy
 */
public record StoreSettings(long segmentSizeBytes, RetentionPolicy retention) {

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "settings";
    static final int MAGIC = 0x534C5354;
    static final short VERSION = 1;
    static final int BYTES = 68;
    /** Flag bit: registered consumer positions do not hold retention back. */
    static final short CONSUMERS_DO_NOT_HOLD = 1;

    /**
     * @return the settings saved in {@code directory}, or null if there are none
     * @throws StoreCorruptedException if the file is damaged (it is replaced atomically, so no power cut does that)
     */
    public static StoreSettings read(FileIO io, Path directory) throws IOException {
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return null;
        }
        byte[] bytes = FileTree.readAll(io, path);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, Math.min(bytes.length, BYTES - 4));
        if (bytes.length != BYTES || buffer.getInt(0) != MAGIC || buffer.getShort(4) != VERSION
                || (buffer.getShort(6) & ~CONSUMERS_DO_NOT_HOLD) != 0 || buffer.getInt(BYTES - 4) != (int) crc.getValue()) {
            throw new StoreCorruptedException("store settings " + path + " are damaged (bad magic, version or checksum);"
                    + " open the store with overrideStoreSettings to write them again", path, -1);
        }
        try {
            return new StoreSettings(buffer.getLong(8), new RetentionPolicy(buffer.getLong(16), buffer.getLong(24),
                    buffer.getDouble(32), buffer.getDouble(40), buffer.getDouble(48), buffer.getLong(56),
                    (buffer.getShort(6) & CONSUMERS_DO_NOT_HOLD) == 0));
        } catch (IllegalArgumentException e) {
            throw new StoreCorruptedException("store settings " + path + " hold invalid values: " + e.getMessage(),
                    path, -1);
        }
    }

    /**
     * The store's own settings (segment size, retention) win over the opener's, unless the opener overrides them; a
     * new store, or an override, saves them. A message limit the store's segments cannot hold is lowered to fit.
     *
     * @param config the opener's configuration
     * @param directory the store's directory file
     * @param readOnly save nothing
     * @return the configuration the store runs with
     * @throws StoreCorruptedException if the saved settings are damaged and the opener does not override them
     */
    public static StoreConfig settle(StoreConfig config, StoreDirectory directory, boolean readOnly)
            throws IOException {
        StoreSettings saved;
        try {
            saved = read(config.fileIO(), directory.root());
        } catch (StoreCorruptedException e) {
            if (!config.overrideStoreSettings() || readOnly) {
                throw e;
            }
            saved = null; // replaced below
        }
        StoreSettings wanted = new StoreSettings(config.segmentSizeBytes(), config.retention());
        StoreSettings effective = saved == null || config.overrideStoreSettings() ? wanted : saved;
        if (!readOnly && !effective.equals(saved)) {
            effective.write(config.fileIO(), directory.root());
        }
        if (effective.segmentSizeBytes() == config.segmentSizeBytes() && effective.retention().equals(config.retention())) {
            return config;
        }
        long largest = effective.segmentSizeBytes() - StoreConfig.RECORD_OVERHEAD_BYTES;
        return config.toBuilder().segmentSizeBytes(effective.segmentSizeBytes()).retention(effective.retention())
                .maxMessageBytes((int) Math.min(config.maxMessageBytes(), largest)).build();
    }

    /** Writes these settings atomically into {@code directory}. */
    public void write(FileIO io, Path directory) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putShort(VERSION)
                .putShort(retention.consumersHoldRetention() ? 0 : CONSUMERS_DO_NOT_HOLD).putLong(segmentSizeBytes)
                .putLong(retention.retentionMillis()).putLong(retention.retentionBytes())
                .putDouble(retention.diskCleanRatio()).putDouble(retention.diskEmergencyRatio())
                .putDouble(retention.diskHardRatio()).putLong(retention.checkIntervalMillis());
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, BYTES - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, FILE_NAME, buffer);
    }
}
