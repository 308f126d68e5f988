package io.sluice.bench.lab;

import java.util.Locale;

/** Parses and prints byte sizes: {@code 64}, {@code 8k}, {@code 512m}, {@code 1g} (binary units). Stateless. */
public final class Sizes {

    private Sizes() {
    }

    /** @throws UsageException if {@code text} is not a positive size */
    public static long parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        long multiplier = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k' -> multiplier = 1L << 10;
                case 'm' -> multiplier = 1L << 20;
                case 'g' -> multiplier = 1L << 30;
                default -> multiplier = 1;
            }
        }
        String digits = multiplier == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long value = Long.parseLong(digits);
            if (value <= 0 || value > Long.MAX_VALUE / multiplier) {
                throw new UsageException("size must be positive: " + text);
            }
            return value * multiplier;
        } catch (NumberFormatException e) {
            throw new UsageException("not a size: '" + text + "' (use a number with an optional k, m or g suffix)");
        }
    }

    /** @return {@code bytes} in the largest binary unit that divides it, e.g. {@code 512M}, {@code 100B} */
    public static String format(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "G";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "M";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "K";
        }
        return bytes + "B";
    }
}
