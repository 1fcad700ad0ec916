package dev.pgtask.cli.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Median and spread of a measurement's runs; {@link #SKIPPED} for a measurement not selected. */
record Stat(double median, double min, double max) {

  static final Stat SKIPPED = new Stat(Double.NaN, Double.NaN, Double.NaN);

  static Stat of(List<Double> values) {
    List<Double> v = new ArrayList<>(values);
    Collections.sort(v);
    return new Stat(v.get(v.size() / 2), v.get(0), v.get(v.size() - 1));
  }

  static double quantile(List<Double> sorted, double q) {
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }
}
