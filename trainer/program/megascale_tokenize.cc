// megascale-tokenize: learns a byte-level BPE vocabulary from text and turns text into token shards.
//   megascale-tokenize train  --input TEXT[.gz] --vocab N --out FILE.bpe
//   megascale-tokenize encode --input TEXT[.gz] [--tokenizer FILE.bpe] --out SHARD.bin
#include <chrono>
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include "trainer/data/token_shard.h"
#include "trainer/data/training_data.h"

namespace {

constexpr const char* kUsage =
    "usage: megascale-tokenize train  --input TEXT[.gz] --vocab N --out FILE.bpe\n"
    "       megascale-tokenize encode --input TEXT[.gz] [--tokenizer FILE.bpe] --out SHARD.bin\n"
    "train learns byte-level BPE merges (ids 0-255 are the bytes); encode writes a checksummed token shard\n"
    "(bytes only when no --tokenizer is given) that megascale-train --data reads.\n";

std::map<std::string, std::string> flags(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 2; i < argc; i += 2) {
    const std::string name = argv[i];
    if (name.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("expected --name value, got '" + name + "'");
    out[name.substr(2)] = argv[i + 1];
  }
  return out;
}

std::string required(std::map<std::string, std::string>& f, const std::string& name) {
  auto it = f.find(name);
  if (it == f.end()) throw std::invalid_argument("--" + name + " is required");
  return it->second;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace megascale::trainer;
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command != "train" && command != "encode") {
      std::cerr << kUsage;
      return command == "-h" || command == "--help" ? 0 : 2;
    }
    auto f = flags(argc, argv);
    const std::string input = required(f, "input"), out = required(f, "out");
    if (command == "train") {
      const std::string vocab = required(f, "vocab");
      TrainingData data = loadTrainingData(input, "bpe:" + vocab, "");
      data.tokenizer.save(out);
      std::cout << data.description << "\nwrote " << out << " (" << data.tokenizer.vocabSize() << " tokens)\n";
    } else {
      const std::string tokenizer = f.count("tokenizer") ? f["tokenizer"] : "bytes";
      TrainingData data = loadTrainingData(input, tokenizer, "");
      writeTokenShard(out, std::vector<int32_t>(data.tokens->begin(), data.tokens->end()), data.vocab);
      std::cout << data.description << "\nwrote " << out << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "megascale-tokenize: " << e.what() << "\n";
    return 2;
  }
}
