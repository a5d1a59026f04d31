// megascale-train: trains a GPT on the CPU, in one process or as one rank of a 3D-parallel job.
#include <exception>
#include <iostream>

#include "trainer/kernels/gemm.h"
#include "trainer/program/training_run.h"

int main(int argc, char** argv) {
  using namespace megascale::trainer;
  try {
    if (argc == 3 && std::string(argv[1]) == "--gemm" && std::string(argv[2]) == "list") {
      for (const auto& backend : availableGemmBackends()) std::cout << backend.name << "\n";
      return 0;
    }
    bool help = false;
    TrainOptions options = parseTrainOptions(argc, argv, help);
    if (help) {
      std::cout << trainUsage();
      return 0;
    }
    return runTraining(options);
  } catch (const std::exception& e) {
    std::cerr << "megascale-train: " << e.what() << "\n";
    return 2;
  }
}
