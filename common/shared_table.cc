#include "common/shared_table.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/status.h"

namespace megascale {

SharedTable::SharedTable(const char* name, int count, size_t area_bytes) : count_(count), area_bytes_(area_bytes) {
  fd_ = memfd_create(name, 0);  // inherited by the ranks: no MFD_CLOEXEC
  if (fd_ < 0) throw Error(ErrorCode::kSystem, std::string(name) + ": memfd_create failed: " + errnoText(errno));
  const size_t bytes = static_cast<size_t>(count) * area_bytes;
  void* map = MAP_FAILED;
  // Pages the ranks never touch cost nothing: a memfd is sparse.
  if (ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
    map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  }
  if (map == MAP_FAILED) {
    const int err = errno;
    close(fd_);
    throw Error(ErrorCode::kSystem,
                std::string(name) + ": cannot size or map " + std::to_string(bytes) + " bytes: " + errnoText(err));
  }
  base_ = static_cast<char*>(map);
}

SharedTable::~SharedTable() {
  munmap(base_, static_cast<size_t>(count_) * area_bytes_);
  close(fd_);
}

std::string SharedTable::environmentValue(int index) const {
  return std::to_string(fd_) + ":" + std::to_string(index);
}

void SharedTable::clear() {
  // Punching the pages out keeps an untouched table sparse (a memset would fault every page in).
  const size_t bytes = static_cast<size_t>(count_) * area_bytes_;
  if (madvise(base_, bytes, MADV_REMOVE) != 0) std::memset(base_, 0, bytes);
}

char* mapSharedArea(const char* variable, size_t area_bytes) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return nullptr;
  int fd = -1, index = -1;
  struct stat st {};
  if (std::sscanf(value, "%d:%d", &fd, &index) != 2 || fd < 0 || index < 0 || fstat(fd, &st) != 0 ||
      static_cast<size_t>(st.st_size) < (static_cast<size_t>(index) + 1) * area_bytes) {
    MSC_LOG_WARN("%s=%s names no table this process inherited; not reporting there", variable, value);
    return nullptr;
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    MSC_LOG_WARN("%s: cannot map the table: %s; not reporting there", variable, errnoText(errno).c_str());
    return nullptr;
  }
  close(fd);
  return static_cast<char*>(map) + static_cast<size_t>(index) * area_bytes;
}

}  // namespace megascale
