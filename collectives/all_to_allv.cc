// All-to-all with a block of its own size per peer (MPI_Alltoallv): a group of sends and receives in the
// pairwise all-to-all's order (step k: to rank + k, from rank - k), so that every pair of ranks posts its
// matching transfers together, and this rank's block to itself a local copy inside the same operation (it keeps
// the communicator's stream order). A peer that sends another size than the receiver expects fails the
// operation with mscMismatch on the receiver, as any point-to-point size mismatch does.
#include <cstdint>

#include "collectives/communicator.h"
#include "collectives/dtype.h"

namespace megascale {

std::shared_ptr<Work> Communicator::allToAllv(const void* in, const size_t* send_counts, const size_t* send_displs,
                                              void* out, const size_t* recv_counts, const size_t* recv_displs,
                                              mscDataType_t type) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "all_to_allv: rank " + std::to_string(rank_) + ": " + why);
  };
  if (!validDtype(type)) throw bad("unknown datatype " + std::to_string(static_cast<int>(type)));
  if (send_counts == nullptr || send_displs == nullptr || recv_counts == nullptr || recv_displs == nullptr) {
    throw bad("a count or displacement array is null (each needs one entry per rank)");
  }
  const size_t es = dtypeSize(type);
  // The byte span [displacement, displacement + count) of an entry, checked for overflow and a null buffer.
  auto span = [&](const char* which, int peer, size_t count, size_t displacement, const void* base) {
    if (count > SIZE_MAX / es || displacement > SIZE_MAX / es - count) {
      throw bad(std::string(which) + " block for rank " + std::to_string(peer) + " (" + std::to_string(count) +
                " elements at " + std::to_string(displacement) + ") overflows");
    }
    if (count > 0 && base == nullptr) throw bad(std::string("null ") + which + " buffer with a count of " + std::to_string(count));
    return displacement * es;
  };
  auto* in_bytes = static_cast<uint8_t*>(const_cast<void*>(in));
  auto* out_bytes = static_cast<uint8_t*>(out);
  std::vector<PointToPoint> ops;
  for (int k = 0; k < nranks_; ++k) {
    const int to = (rank_ + k) % nranks_, from = (rank_ - k + nranks_) % nranks_;
    const size_t send_at = span("send", to, send_counts[to], send_displs[to], in);
    const size_t recv_at = span("receive", from, recv_counts[from], recv_displs[from], out);
    if (k == 0 && send_counts[to] != recv_counts[from]) {
      throw bad("sends itself " + std::to_string(send_counts[to]) + " elements but receives " +
                std::to_string(recv_counts[from]) + " from itself");
    }
    if (send_counts[to] > 0) ops.push_back({true, in_bytes + send_at, send_counts[to], type, to});
    if (recv_counts[from] > 0) ops.push_back({false, out_bytes + recv_at, recv_counts[from], type, from});
  }
  Task task;
  task.spec = ScheduleSpec{Collective::kSendRecv, Algorithm::kAuto, 0, rank_, nranks_, 0, false};
  task.type = mscUint8;
  task.op = mscSum;
  task.p2p = std::move(ops);
  task.p2p_name = "all_to_allv";
  return enqueue(std::move(task));
}

}  // namespace megascale
