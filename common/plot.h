// Figures as PNG files, drawn with cairo: line charts (the trainer's loss curve, the init-scale curve) and heat
// maps (ranks x steps of compute time). Every figure has a title, axis labels with units and a legend (a key of
// the series, or a colour bar). Kept out of libmegascale (library megascale_plot), so the library needs no
// drawing code.
#pragma once

#include <string>
#include <vector>

namespace megascale::plot {

struct Axis {
  std::string label;       // with its unit: "step", "loss (nats per token)"
  bool log = false;        // log10 scale (every value must be > 0)
  bool from_zero = false;  // a linear axis that starts at 0
};

struct Series {
  std::string name;  // in the key
  std::vector<double> x, y;  // same length
};

struct LineChart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
};

/// An 800 x 450 PNG. Throws std::invalid_argument for x and y of unequal length or a value <= 0 on a log axis,
/// std::runtime_error when the file cannot be written.
void writeLineChart(const std::string& path, const LineChart& chart);

struct HeatMap {
  std::string title;
  std::string x_label, y_label;  // with units
  std::string value_label;       // the colour bar's: "compute per step (ms)"
  std::vector<std::vector<double>> rows;  // rows[r][c]: row r (drawn top to bottom), column c
  std::vector<std::string> row_names;     // one per row, or empty (rows are numbered)
};

/// A PNG whose height grows with the rows. Throws std::invalid_argument for rows of unequal length,
/// std::runtime_error when the file cannot be written.
void writeHeatMap(const std::string& path, const HeatMap& map);

}  // namespace megascale::plot
