package io.sluice.bench.lab;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One result table: named columns, rows of values. Printed aligned for people, written as CSV and JSON for
 * tools. Not thread-safe: experiments fill it from their coordinating thread.
 */
public final class Table {

    private final String name;
    private final String title;
    private final List<String> columns;
    private final List<List<Object>> rows = new ArrayList<>();

    Table(String name, String title, List<String> columns) {
        this.name = name;
        this.title = title;
        this.columns = List.copyOf(columns);
    }

    /** Adds a row; it must have one value per column. */
    public Table add(Object... values) {
        if (values.length != columns.size()) {
            throw new IllegalArgumentException("table " + name + " has " + columns.size() + " columns, got "
                    + values.length + " values");
        }
        rows.add(List.of(values));
        return this;
    }

    /** @return the file-name stem of this table (its CSV is {@code name + ".csv"}) */
    public String name() {
        return name;
    }

    String render() {
        List<String[]> cells = new ArrayList<>();
        cells.add(columns.toArray(String[]::new));
        for (List<Object> row : rows) {
            cells.add(row.stream().map(Table::human).toArray(String[]::new));
        }
        int[] widths = new int[columns.size()];
        for (String[] line : cells) {
            for (int i = 0; i < line.length; i++) {
                widths[i] = Math.max(widths[i], line[i].length());
            }
        }
        StringBuilder out = new StringBuilder(title).append('\n');
        for (int r = 0; r < cells.size(); r++) {
            String[] line = cells.get(r);
            for (int i = 0; i < line.length; i++) {
                String cell = line[i];
                boolean number = r > 0 && row(r).get(i) instanceof Number;
                out.append(i == 0 ? "  " : "  ")
                        .append(number ? " ".repeat(widths[i] - cell.length()) + cell
                                : cell + " ".repeat(widths[i] - cell.length()));
            }
            out.append('\n');
            if (r == 0) {
                out.append("  ");
                for (int w : widths) {
                    out.append("-".repeat(w)).append("  ");
                }
                out.append('\n');
            }
        }
        return out.toString();
    }

    private List<Object> row(int renderedLine) {
        return rows.get(renderedLine - 1);
    }

    /** @return the table as Markdown, title first */
    String markdown() {
        StringBuilder out = new StringBuilder("**").append(title).append("**\n\n| ")
                .append(String.join(" | ", columns)).append(" |\n|");
        for (int i = 0; i < columns.size(); i++) {
            out.append(" --- |");
        }
        out.append('\n');
        for (List<Object> row : rows) {
            out.append("| ").append(String.join(" | ", row.stream().map(Table::human).toList())).append(" |\n");
        }
        return out.toString();
    }

    /** @return the table as an HTML fragment */
    String html() {
        StringBuilder out = new StringBuilder("<table>\n<caption>").append(Html.escape(title))
                .append("</caption>\n<tr>");
        columns.forEach(c -> out.append("<th>").append(Html.escape(c)).append("</th>"));
        out.append("</tr>\n");
        for (List<Object> row : rows) {
            out.append("<tr>");
            row.forEach(v -> out.append(v instanceof Number ? "<td class=n>" : "<td>")
                    .append(Html.escape(human(v))).append("</td>"));
            out.append("</tr>\n");
        }
        return out.append("</table>\n").toString();
    }

    String csv() {
        StringBuilder out = new StringBuilder(String.join(",", columns.stream().map(Table::csvCell).toList()));
        out.append('\n');
        for (List<Object> row : rows) {
            out.append(String.join(",", row.stream().map(v -> csvCell(v == null ? "" : String.valueOf(v))).toList()));
            out.append('\n');
        }
        return out.toString();
    }

    Map<String, Object> json() {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("name", name);
        json.put("title", title);
        json.put("columns", columns);
        json.put("rows", rows);
        return json;
    }

    /** @return a value as people read it: numbers with sensible precision, null as "-" */
    static String human(Object value) {
        return switch (value) {
            case null -> "-";
            case Double d when d.isNaN() -> "-";
            case Double d when Math.abs(d) >= 1000 -> String.format(Locale.ROOT, "%,.0f", d);
            case Double d when Math.abs(d) >= 10 -> String.format(Locale.ROOT, "%.1f", d);
            case Double d -> String.format(Locale.ROOT, "%.3f", d);
            case Long l -> String.format(Locale.ROOT, "%,d", l);
            case Integer i -> String.format(Locale.ROOT, "%,d", i);
            default -> value.toString();
        };
    }

    private static String csvCell(String text) {
        return text.contains(",") || text.contains("\"") ? '"' + text.replace("\"", "\"\"") + '"' : text;
    }
}
