/**
 * What the cluster adds to Apache Ratis 3.3.0 to get around its faults, each named after the fault it mends: the
 * transport's leader-side overrides ({@link io.sluice.cluster.ratis.RaftTransport}, with the watch for an install left
 * waiting, {@link io.sluice.cluster.ratis.StuckInstall}), the watch for a hand-over left pending
 * ({@link io.sluice.cluster.ratis.StuckHandOver}), and reading and cutting a log through its segment files where
 * Ratis has no API for it ({@link io.sluice.cluster.ratis.OpenSegmentBelowSnapshot},
 * {@link io.sluice.cluster.ratis.RaftLogTail}).
 *
 * <p>Kept apart so that a Ratis upgrade knows where to look: each class says which fault of 3.3.0 it answers, and the
 * package depends on Ratis and the JDK only, never on the rest of the cluster (checked by the cluster's layering
 * test). docs/cluster.md and docs/history.md tell each fault's story.
 */
package io.sluice.cluster.ratis;
