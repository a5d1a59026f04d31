// Line charts as PNG files (libpng), for the tools' own figures: the trainer's loss curve, the simulator's queue
// lengths. Axes are scaled to the data; tick labels use a built-in digit font, so series are told apart by colour
// (a numbered key in the top right corner, in the order given) and named in the caller's CSV or docs.
#pragma once

#include <string>
#include <vector>

namespace megascale {

struct PlotSeries {
  std::vector<double> x, y;  // same length
};

/// Draws every series on one pair of axes (x and y ranges span them all; y starts at 0 when `y_from_zero`).
/// Throws std::runtime_error when the file cannot be written, std::invalid_argument for x/y of unequal length.
void writeLinePlot(const std::string& path, const std::vector<PlotSeries>& series, bool y_from_zero = false);

}  // namespace megascale
