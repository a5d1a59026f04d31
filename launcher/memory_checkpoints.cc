#include "launcher/memory_checkpoints.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/status.h"

namespace megascale::launcher {

namespace fs = std::filesystem;

MemoryCheckpoints::MemoryCheckpoints(const std::string& job_id) {
  std::string base = "/dev/shm";
  if (access(base.c_str(), W_OK) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    std::fprintf(stderr, "megascale-run: /dev/shm is not writable; checkpoints between restarts go to %s, which may "
                         "be disk\n", base.c_str());
  }
  std::string name = base + "/megascale-" + job_id.substr(0, 16) + "-XXXXXX";
  std::vector<char> text(name.begin(), name.end());
  text.push_back('\0');
  if (mkdtemp(text.data()) == nullptr) {
    throw Error(ErrorCode::kSystem, "cannot make the checkpoint directory in host memory " + name + ": " +
                                        errnoText(errno));
  }
  path_ = text.data();
}

MemoryCheckpoints::~MemoryCheckpoints() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string MemoryCheckpoints::describeLatest() const {
  std::ifstream in(path_ + "/latest");
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) return "no checkpoint yet";
  std::error_code ec;
  uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path_ + "/" + name, ec)) {
    if (entry.is_regular_file(ec)) bytes += entry.file_size(ec);
  }
  const size_t digits = name.find_first_of("0123456789");
  char text[128];
  std::snprintf(text, sizeof(text), "step %lld (%.1f MiB)",
                digits == std::string::npos ? -1LL : std::atoll(name.c_str() + digits),
                static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace megascale::launcher
