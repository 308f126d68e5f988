package io.sluice.cli;

import java.util.Map;

/** Builds one-line JSON objects for {@code --json} output. Not thread-safe. */
final class Json {

    private final StringBuilder out = new StringBuilder("{");

    Json put(String name, Object value) {
        if (out.length() > 1) {
            out.append(',');
        }
        quote(out, name);
        out.append(':');
        value(out, value);
        return this;
    }

    @Override
    public String toString() {
        return out + "}";
    }

    private static void value(StringBuilder out, Object value) {
        switch (value) {
            case null -> out.append("null");
            case Number n -> out.append(n);
            case Boolean b -> out.append(b);
            case Json j -> out.append(j);
            case Iterable<?> items -> {
                out.append('[');
                boolean first = true;
                for (Object item : items) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    value(out, item);
                }
                out.append(']');
            }
            case Map<?, ?> map -> {
                Json object = new Json();
                map.forEach((k, v) -> object.put(String.valueOf(k), v));
                out.append(object);
            }
            default -> quote(out, value.toString());
        }
    }

    static void quote(StringBuilder out, String text) {
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
