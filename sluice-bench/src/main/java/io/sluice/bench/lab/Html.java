package io.sluice.bench.lab;

/** Escapes text for HTML. Stateless. */
public final class Html {

    private Html() {
    }

    /** @return {@code text} with {@code & < > "} escaped */
    public static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
