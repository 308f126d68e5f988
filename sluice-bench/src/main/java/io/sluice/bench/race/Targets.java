package io.sluice.bench.race;

import io.sluice.bench.peers.ChronicleTarget;
import io.sluice.bench.peers.RocketMqTarget;
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

    /** @return RocketMQ's store on {@code directory}, through its mapping or its transient store pool */
    public static Target rocketMq(Path directory, Durability durability, boolean transientPool, long segmentBytes)
            throws Exception {
        return new RocketMqTarget(directory, durability, transientPool, segmentBytes);
    }

    /** @return a Chronicle Queue on {@code directory} (ASYNC only: it has no synchronous flush) */
    public static Target chronicle(Path directory) {
        return new ChronicleTarget(directory);
    }
}
