#include "trainer/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace megascale::trainer {

namespace {

std::runtime_error failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// False with errno set when a write fails.
bool writeAll(int fd, const std::vector<std::string_view>& parts) {
  for (const std::string_view contents : parts) {
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
  }
  return true;
}

}  // namespace

void writeFileAtomically(const std::string& path, std::string_view contents) {
  writeFileAtomically(path, std::vector<std::string_view>{contents});
}

void writeFileAtomically(const std::string& path, const std::vector<std::string_view>& parts) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw failure("cannot create", temporary);
  if (!writeAll(fd, parts)) {
    auto error = failure("cannot write", temporary);
    close(fd);
    unlink(temporary.c_str());
    throw error;
  }
  if (fsync(fd) != 0) {
    auto error = failure("cannot fsync", temporary);
    close(fd);
    unlink(temporary.c_str());
    throw error;
  }
  close(fd);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    auto error = failure("cannot rename " + temporary + " to", path);
    unlink(temporary.c_str());
    throw error;
  }
  const int dir = open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
}

}  // namespace megascale::trainer
