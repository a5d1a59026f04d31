// megascale-diagnose: reads flight records (a rank's own dump after a timeout or SIGUSR1, or the driver's dump of
// every rank at a fault) and prints the verdict in one line, then the detail (launcher/diagnosis.h).
//   megascale-diagnose DIR|FILE...   every rank-*.json / pid-*.json in each directory, and each file named
// Exit status: 0 with a verdict, 1 when the records show nothing wrong, 2 when an input cannot be read.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/flight_dump.h"
#include "common/status.h"
#include "launcher/diagnosis.h"

namespace {

namespace fs = std::filesystem;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: megascale-diagnose DIR|FILE...\n"
               "  Reads the flight records in each directory (rank-*.json, pid-*.json) and each file, and names\n"
               "  the culprit: the rank that never entered the operation the others wait in, or the ranks that\n"
               "  called an operation differently from their group (a mismatch, the program's bug).\n"
               "  Records come from megascale-run (restart-N/ in its diagnosis directory, written when it detects\n"
               "  a fault), or from a rank itself: after a timeout, or on SIGUSR1 (MEGASCALE_FLIGHT_RECORDER_DIR).\n");
}

std::vector<fs::path> recordFiles(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const std::string& input : inputs) {
    std::error_code error;
    if (!fs::is_directory(input, error)) {
      files.emplace_back(input);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(input, error)) {
      const std::string name = entry.path().filename().string();
      const bool record = (name.rfind("rank-", 0) == 0 || name.rfind("pid-", 0) == 0) && entry.path().extension() == ".json";
      if (record) found.push_back(entry.path());
    }
    if (found.empty()) {
      throw megascale::Error(megascale::ErrorCode::kInvalidArgument, input + ": no flight records (rank-*.json) in it");
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

megascale::flight::RankRecord readRecord(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw megascale::Error(megascale::ErrorCode::kInvalidArgument, path.string() + ": cannot open it");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return megascale::flight::rankRecordFromJson(text.str());
  } catch (const megascale::Error& e) {
    throw megascale::Error(e.code(), path.string() + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    }
    inputs.emplace_back(argv[i]);
  }
  if (inputs.empty()) {
    usage(stderr);
    return 2;
  }
  std::vector<megascale::flight::RankRecord> records;
  try {
    for (const fs::path& file : recordFiles(inputs)) records.push_back(readRecord(file));
  } catch (const megascale::Error& e) {
    std::fprintf(stderr, "megascale-diagnose: %s\n", e.what());
    return 2;
  }
  const megascale::launcher::Diagnosis d = megascale::launcher::diagnose(records);
  std::printf("diagnosis: %s\n", d.verdict.c_str());
  for (const std::string& line : d.detail) std::printf("  %s\n", line.c_str());
  return d.kind == megascale::launcher::Diagnosis::Kind::kNothing ? 1 : 0;
}
