package io.sluice.bench.lab;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;

/** Builds the lab's PNG charts with XChart: grouped bars per category, and lines over an x axis. Stateless. */
public final class Charts {

    private static final int WIDTH = 1000;
    private static final int HEIGHT = 560;

    private Charts() {
    }

    /**
     * A grouped bar chart: one group per category, one bar per series. {@code null} values are left out.
     *
     * @param logarithmic a log y axis, for figures spanning orders of magnitude
     */
    public static CategoryChart bars(String title, String xTitle, String yTitle, List<String> categories,
                                     Map<String, List<Double>> series, boolean logarithmic) {
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title)
                .xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setYAxisLogarithmic(logarithmic);
        if (logarithmic) {
            // Bars grow from the axis minimum, which XChart would otherwise put at zero: not on a log axis.
            double smallest = series.values().stream().flatMap(List::stream)
                    .filter(v -> v != null && v > 0).mapToDouble(Double::doubleValue).min().orElse(1);
            chart.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(smallest))));
        }
        chart.getStyler().setOverlapped(false);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        series.forEach((name, values) -> {
            // XChart cannot draw zero or missing bars on a log axis; those cells have no figure.
            List<Number> cleaned = values.stream()
                    .map(v -> v == null || v.isNaN() || (logarithmic && v <= 0) ? null : (Number) v).toList();
            chart.addSeries(name, categories, cleaned);
        });
        return chart;
    }

    /** A line chart: one line per series over shared x values. */
    public static XYChart lines(String title, String xTitle, String yTitle, Map<String, double[][]> series) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title)
                .xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setMarkerSize(0);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        series.forEach((name, xy) -> {
            if (xy[0].length > 0) {
                chart.addSeries(name, xy[0], xy[1]);
            }
        });
        return chart;
    }

    static void savePng(Chart<?, ?> chart, Path file) throws IOException {
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
