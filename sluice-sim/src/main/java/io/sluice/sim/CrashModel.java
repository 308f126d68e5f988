package io.sluice.sim;

import java.util.SplittableRandom;

/**
 * How a power cut treats what was not forced: each dirty page is kept (written back before the cut), lost, or
 * torn; an unforced size change is kept or not; a prefix of each directory's unsynced name changes is kept.
 *
 * @param name a label for reports
 * @param keepPage chance that a dirty page survives whole
 * @param losePage chance that it is lost whole (the rest of the time it is torn, sector by sector)
 * @param keepNames chance, per directory, that its unsynced name changes are cut at a random point rather than
 *     lost or kept whole: 1 for a random prefix always, 0 for {@code allNames} always
 * @param allNames when the prefix is not random: true keeps every unsynced name change, false none
 * @param firstPageLost per file, the first dirty page is lost and every later one kept (the page chances do not
 *     apply): out-of-order writeback at its most damaging, a hole followed by intact later writes
 */
public record CrashModel(String name, double keepPage, double losePage, double keepNames, boolean allNames,
                         boolean firstPageLost) {

    /** Every unforced page survives, lost, or torn with equal chance; names cut at a random point. */
    public static final CrashModel UNIFORM = new CrashModel("uniform", 1.0 / 3, 1.0 / 3, 1, false, false);
    /** Nothing unforced survives: POSIX's minimum. */
    public static final CrashModel LOSE_ALL = new CrashModel("lose-all", 0, 1, 0, false, false);
    /** Everything survives: what a killed process (not a power cut) leaves. */
    public static final CrashModel KEEP_ALL = new CrashModel("keep-all", 1, 0, 0, true, false);
    /** Most pages survive, a few are lost or torn: writeback was nearly done. */
    public static final CrashModel MOSTLY_KEPT = new CrashModel("mostly-kept", 0.9, 0.05, 1, false, false);
    /** In every file the first unforced page is lost and the later ones written back; names cut at random. */
    public static final CrashModel HOLE = new CrashModel("hole", 1, 0, 1, false, true);

    /** The fate of one dirty page. */
    public enum Fate { KEPT, LOST, TORN }

    /** Validates the chances. */
    public CrashModel {
        if (keepPage < 0 || losePage < 0 || keepPage + losePage > 1 || keepNames < 0 || keepNames > 1) {
            throw new IllegalArgumentException("chances must lie in [0, 1] and keepPage + losePage <= 1");
        }
    }

    /** @return one of the models, chosen by {@code random} */
    public static CrashModel pick(SplittableRandom random) {
        return switch (random.nextInt(6)) {
            case 0 -> UNIFORM;
            case 1 -> LOSE_ALL;
            case 2 -> KEEP_ALL;
            case 3 -> MOSTLY_KEPT;
            case 4 -> HOLE;
            default -> {
                double keep = random.nextDouble();
                yield new CrashModel("random", keep, (1 - keep) * random.nextDouble(), random.nextDouble(),
                        random.nextBoolean(), false);
            }
        };
    }

    Fate pageFate(SplittableRandom random) {
        double roll = random.nextDouble();
        return roll < keepPage ? Fate.KEPT : roll < keepPage + losePage ? Fate.LOST : Fate.TORN;
    }

    boolean keepsNewSize(SplittableRandom random) {
        return random.nextDouble() < keepPage + (1 - keepPage - losePage) / 2;
    }

    int namePrefix(SplittableRandom random, int changes) {
        if (changes == 0) {
            return 0;
        }
        if (random.nextDouble() < keepNames) {
            return random.nextInt(changes + 1);
        }
        return allNames ? changes : 0;
    }
}
