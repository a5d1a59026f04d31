// Which RDMA devices and ports a job may use, in NCCL_IB_HCA's syntax (MEGASCALE_IB_HCA): a comma-separated
// list of `device[:port]` entries, each a name prefix ("mlx5" takes mlx5_0 ... mlx5_17) unless the list starts
// with `=` (exact names); a leading `^` (before any `=`) turns the list into the ports to leave out. Empty: every
// port. "mlx5_0:1,mlx5_1" takes port 1 of mlx5_0 and every port of mlx5_1; "^=mlx5_3" all but mlx5_3.
#pragma once

#include <string>
#include <vector>

namespace megascale::transport {

class HcaList {
 public:
  /// Throws Error(kInvalidArgument) for an entry without a name or with a port that is not 1..255.
  static HcaList parse(const std::string& text);
  /// Whether port `port` of device `name` is taken.
  bool selects(const std::string& name, int port) const;
  const std::string& text() const { return text_; }

 private:
  struct Entry {
    std::string name;
    int port = 0;  // 0: every port
  };
  std::string text_;
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<Entry> entries_;
};

}  // namespace megascale::transport
