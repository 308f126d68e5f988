package io.sluice.bench.race;

import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Table;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/** Writes race outcomes as table rows, and picks the median of several rounds. Stateless. */
public final class RaceTable {

    /** Columns after the ones that name the cell. */
    public static final String[] FIGURES = {"msg/s", "MB/s", "p50 us", "p99 us", "p99.9 us", "max us", "CPU cores"};

    private RaceTable() {
    }

    /** @return a table whose columns are {@code keys} followed by {@link #FIGURES} */
    public static Table table(Lab lab, String name, String title, String... keys) {
        String[] columns = Arrays.copyOf(keys, keys.length + FIGURES.length);
        System.arraycopy(FIGURES, 0, columns, keys.length, FIGURES.length);
        return lab.table(name, title, columns);
    }

    /** Adds a row: the key values, then the outcome's figures. */
    public static void add(Table table, Race.Outcome outcome, Object... keys) {
        Object[] row = Arrays.copyOf(keys, keys.length + FIGURES.length);
        Object[] figures = {outcome.messagesPerSecond(), outcome.megabytesPerSecond(), outcome.micros(50),
                outcome.micros(99), outcome.micros(99.9), outcome.maxMicros(), outcome.cpuCores()};
        System.arraycopy(figures, 0, row, keys.length, figures.length);
        table.add(row);
    }

    /** @return the round with the median throughput (the lower middle one for an even count) */
    public static Race.Outcome median(List<Race.Outcome> rounds) {
        List<Race.Outcome> sorted = rounds.stream()
                .sorted(Comparator.comparingDouble(Race.Outcome::messagesPerSecond)).toList();
        return sorted.get((sorted.size() - 1) / 2);
    }
}
