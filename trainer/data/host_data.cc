#include "trainer/data/host_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace megascale::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'T', 'O', 'K', 'N', 'S', '1'};

struct SegmentHeader {
  char magic[8];
  uint64_t tokens;
  int32_t vocab;
  uint32_t tokenizer_bytes, description_bytes;
  uint32_t tokens_offset;  // 4-byte aligned, after the two texts
};

struct Announcement {  // rank 0 -> the host's ranks
  int32_t ok = 0;
  uint64_t bytes = 0;
  char name[96] = {};
  char error[800] = {};
};

void waitOrThrow(const std::shared_ptr<Work>& work, std::chrono::milliseconds timeout, const char* what) {
  const Status status = work->wait(timeout);
  if (!status.isOk()) throw Error(status.code(), std::string("sharing the training data on this host: ") + what +
                                                     ": " + status.message());
}

std::string systemError(const std::string& what, const std::string& name) {
  return what + " " + name + ": " + std::strerror(errno);
}

// Rank 0: the segment with everything the other ranks need. Returns its size.
uint64_t publish(const TrainingData& data, const std::string& name) {
  const std::string tokenizer = data.tokenizer.serialize();
  SegmentHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.tokens = data.tokens->size();
  h.vocab = data.vocab;
  h.tokenizer_bytes = static_cast<uint32_t>(tokenizer.size());
  h.description_bytes = static_cast<uint32_t>(data.description.size());
  h.tokens_offset = static_cast<uint32_t>((sizeof(h) + tokenizer.size() + data.description.size() + 3) / 4 * 4);
  const uint64_t bytes = h.tokens_offset + h.tokens * sizeof(int32_t);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw std::runtime_error(systemError("cannot create shared memory", name));
  void* map = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int saved = errno;
  close(fd);
  if (map == MAP_FAILED) {
    shm_unlink(name.c_str());
    errno = saved;
    throw std::runtime_error(systemError("cannot size or map shared memory", name) + " (" + std::to_string(bytes) +
                             " bytes; is /dev/shm large enough?)");
  }
  auto* out = static_cast<char*>(map);
  std::memcpy(out, &h, sizeof(h));
  std::memcpy(out + sizeof(h), tokenizer.data(), tokenizer.size());
  std::memcpy(out + sizeof(h) + tokenizer.size(), data.description.data(), data.description.size());
  std::memcpy(out + h.tokens_offset, data.tokens->begin(), h.tokens * sizeof(int32_t));
  munmap(map, bytes);
  return bytes;
}

// The other ranks: the segment mapped read-only and checked against what rank 0 announced.
TrainingData attach(const Announcement& a) {
  const std::string name = a.name;
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) throw std::runtime_error(systemError("cannot open shared memory", name));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != a.bytes || a.bytes < sizeof(SegmentHeader)) {
    close(fd);
    throw std::runtime_error("shared memory " + name + " is not the size rank 0 announced");
  }
  void* map = mmap(nullptr, a.bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) throw std::runtime_error(systemError("cannot map shared memory", name));
  const auto* in = static_cast<const char*>(map);
  SegmentHeader h;
  std::memcpy(&h, in, sizeof(h));
  const uint64_t bytes = a.bytes;
  auto release = [map, bytes] { munmap(map, bytes); };
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 ||
      sizeof(h) + uint64_t{h.tokenizer_bytes} + h.description_bytes > h.tokens_offset ||
      h.tokens_offset + h.tokens * sizeof(int32_t) != bytes) {
    release();
    throw std::runtime_error("shared memory " + name + " holds no token segment of this format");
  }
  TrainingData data;
  data.vocab = h.vocab;
  data.tokenizer = Tokenizer::parse(std::string(in + sizeof(h), h.tokenizer_bytes), name);
  data.description = std::string(in + sizeof(h) + h.tokenizer_bytes, h.description_bytes) +
                     " [mapped from the host's loader]";
  data.tokens = std::make_shared<const TokenStore>(reinterpret_cast<const int32_t*>(in + h.tokens_offset),
                                                   static_cast<size_t>(h.tokens), release);
  return data;
}

}  // namespace

TrainingData loadOncePerHost(Communicator& host, std::chrono::milliseconds timeout,
                             const std::function<TrainingData()>& load) {
  if (host.size() == 1) return load();
  Announcement a;
  TrainingData data;
  std::string error;
  if (host.rank() == 0) {
    std::random_device random;
    const std::string name = "/megascale-data-" + std::to_string(getpid()) + "-" + std::to_string(random());
    try {
      data = load();
      a.bytes = publish(data, name);
      a.ok = 1;
      std::strncpy(a.name, name.c_str(), sizeof(a.name) - 1);
    } catch (const std::exception& e) {
      error = e.what();
      std::strncpy(a.error, e.what(), sizeof(a.error) - 1);
    }
  }
  waitOrThrow(host.broadcast(&a, &a, sizeof(a), mscUint8, 0), timeout, "announcement");
  if (!a.ok) throw std::runtime_error(host.rank() == 0 ? error : std::string(a.error));
  int32_t attached = 1;
  std::string attach_error;
  if (host.rank() != 0) {
    try {
      data = attach(a);
    } catch (const std::exception& e) {
      attached = 0;
      attach_error = e.what();
    }
  }
  // Every rank has mapped it (or failed to): the name can go; the mappings stay.
  int32_t all = attached;
  waitOrThrow(host.allReduce(&attached, &all, 1, mscInt32, mscMin), timeout, "mapping");
  if (host.rank() == 0) shm_unlink(a.name);
  if (!attached) throw std::runtime_error(attach_error);
  if (!all) throw std::runtime_error("another rank of this host could not map the training data");
  return data;
}

}  // namespace megascale::trainer
