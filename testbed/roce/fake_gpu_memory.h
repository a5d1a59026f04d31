// GPU memory as an RDMA NIC sees it, without a GPU: a dma-buf stand-in (a memfd, which the emulated device's
// ibv_reg_dmabuf_mr maps as a real NIC maps device memory) and a "device" address range that no CPU may touch
// (reserved without access), so any CPU copy to or from it crashes instead of passing unnoticed. The test reads
// and writes the bytes through view().
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace megascale::testbed {

class FakeGpuMemory {
 public:
  explicit FakeGpuMemory(size_t bytes) : bytes_(bytes) {
    fd_ = memfd_create("megascale-fake-gpu", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes)) != 0) throw std::runtime_error("memfd_create failed");
    void* view = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    device_ = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (view == MAP_FAILED || device_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    view_ = static_cast<uint8_t*>(view);
  }
  ~FakeGpuMemory() {
    munmap(view_, bytes_);
    munmap(device_, bytes_);
    close(fd_);
  }
  FakeGpuMemory(const FakeGpuMemory&) = delete;
  FakeGpuMemory& operator=(const FakeGpuMemory&) = delete;

  int fd() const { return fd_; }                                      // the dma-buf
  uint8_t* device() const { return static_cast<uint8_t*>(device_); }  // the device virtual address
  uint8_t* view() const { return view_; }                             // the bytes, for the test
  size_t size() const { return bytes_; }

 private:
  size_t bytes_;
  int fd_ = -1;
  uint8_t* view_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace megascale::testbed
