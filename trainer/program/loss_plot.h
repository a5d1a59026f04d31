// The loss curve as a PNG (common/plot.h): steps on x, the loss on y, titled, labelled and keyed.
#pragma once

#include <string>
#include <vector>

namespace megascale::trainer {

/// losses[i] is the loss of step first_step + i. Throws std::runtime_error when the file cannot be written.
void writeLossPlot(const std::string& path, const std::vector<double>& losses, long first_step);

}  // namespace megascale::trainer
