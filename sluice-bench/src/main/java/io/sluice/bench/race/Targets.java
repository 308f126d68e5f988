package io.sluice.bench.race;

import io.sluice.store.WritePath;
import java.nio.file.Path;

/** Opens the targets the races use. Stateless. */
public final class Targets {

    private Targets() {
    }

    /** @return Sluice on {@code directory} with the given write path and durability */
    public static Target sluice(Path directory, WritePath writePath, Durability durability, long segmentBytes) {
        return new SluiceTarget(directory, writePath, durability, segmentBytes);
    }
}
