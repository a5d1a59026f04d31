#include "launcher/memory_checkpoints.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/status.h"

namespace megascale::launcher {

namespace fs = std::filesystem;

MemoryCheckpoints::MemoryCheckpoints(const std::string& job_id) {
  std::string base = "/dev/shm";
  if (access(base.c_str(), W_OK) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    std::fprintf(stderr,
                 "megascale-run: /dev/shm is not writable; checkpoints between restarts go to %s, which may "
                 "be disk\n",
                 base.c_str());
  }
  std::string name = base + "/megascale-" + job_id.substr(0, 16) + "-XXXXXX";
  std::vector<char> text(name.begin(), name.end());
  text.push_back('\0');
  if (mkdtemp(text.data()) == nullptr) {
    throw Error(ErrorCode::kSystem,
                "cannot make the checkpoint directory in host memory " + name + ": " + errnoText(errno));
  }
  path_ = text.data();
}

MemoryCheckpoints::~MemoryCheckpoints() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string MemoryCheckpoints::describe() const {
  std::error_code ec;
  int ranks = 0;
  uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path_, ec)) {
    if (entry.is_directory(ec)) ++ranks;
    if (entry.is_regular_file(ec)) bytes += entry.file_size(ec);
  }
  if (bytes == 0) return "no checkpoints yet";
  char text[128];
  std::snprintf(text, sizeof(text), "checkpoints of %d ranks (%.1f MiB)", ranks,
                static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace megascale::launcher
