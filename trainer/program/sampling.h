// Text from the trained model, to eyeball what it learned.
#pragma once

#include <cstdint>
#include <string>

#include "trainer/model/gpt.h"
#include "trainer/model/random.h"
#include "trainer/data/training_data.h"

namespace megascale::trainer {

/// `count` tokens sampled after half a window of the training text; bytes that do not print become '?'.
std::string sampleText(Gpt<float>& model, const TrainingData& data, Random& random, int64_t count);

}  // namespace megascale::trainer
