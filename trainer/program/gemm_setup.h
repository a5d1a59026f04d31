// The GEMM backend a run uses, and the peak rate its MFU is measured against.
#pragma once

#include <ostream>

#include "trainer/program/train_options.h"

namespace megascale::trainer {

/// Picks the GEMM backends (--gemm; "auto" measures them on the model's largest GEMM) and returns the MFU
/// denominator: the best rate of the backend this run's GEMMs use, on a square GEMM and on that shape.
double chooseGemm(const TrainOptions& o, bool bf16, std::ostream& log);

}  // namespace megascale::trainer
