package io.sluice.bench.lab;

import java.util.Map;

/** Writes JSON values (maps, lists, numbers, strings, booleans, null) as indented text. Stateless. */
public final class Json {

    private Json() {
    }

    /** @return {@code value} as JSON, maps and lists indented by two spaces per level */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value, 0);
        return out.append('\n').toString();
    }

    private static void write(StringBuilder out, Object value, int depth) {
        switch (value) {
            case null -> out.append("null");
            case Double d when d.isNaN() || d.isInfinite() -> out.append("null");
            case Float f when f.isNaN() || f.isInfinite() -> out.append("null");
            case Number n -> out.append(n);
            case Boolean b -> out.append(b);
            case Map<?, ?> map -> {
                out.append('{');
                int i = 0;
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    out.append(i++ == 0 ? "\n" : ",\n").append("  ".repeat(depth + 1));
                    quote(out, String.valueOf(entry.getKey()));
                    out.append(": ");
                    write(out, entry.getValue(), depth + 1);
                }
                out.append(map.isEmpty() ? "}" : "\n" + "  ".repeat(depth) + "}");
            }
            case Iterable<?> items -> {
                out.append('[');
                int i = 0;
                for (Object item : items) {
                    out.append(i++ == 0 ? "" : ", ");
                    write(out, item, depth + 1);
                }
                out.append(']');
            }
            default -> quote(out, value.toString());
        }
    }

    private static void quote(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
