#include "pytorch/process_group.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "bootstrap/launcher_channel.h"
#include "common/config.h"
#include "common/crypto.h"
#include "common/status.h"
#include "pytorch/torch_store.h"

namespace megascale::pytorch {

namespace {

// Dtypes megascale reduces; movement-only collectives take any dtype as bytes.
bool reducibleType(at::ScalarType t, mscDataType_t* out) {
  switch (t) {
    case at::kFloat:
      *out = mscFloat32;
      return true;
    case at::kDouble:
      *out = mscFloat64;
      return true;
    case at::kHalf:
      *out = mscFloat16;
      return true;
    case at::kBFloat16:
      *out = mscBfloat16;
      return true;
    case at::kChar:
      *out = mscInt8;
      return true;
    case at::kByte:
      *out = mscUint8;
      return true;
    case at::kInt:
      *out = mscInt32;
      return true;
    case at::kLong:
      *out = mscInt64;
      return true;
    default:
      return false;
  }
}

mscDataType_t reductionType(const at::Tensor& t, const char* op) {
  mscDataType_t type;
  TORCH_CHECK(reducibleType(t.scalar_type(), &type), "megascale ", op, ": dtype ", t.scalar_type(),
              " is not supported (float32, float64, float16, bfloat16, int8, uint8, int32, int64 are)");
  return type;
}

mscRedOp_t reductionOp(const c10d::ReduceOp& op, const char* where) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return mscSum;
    case c10d::ReduceOp::AVG:
      return mscAvg;
    case c10d::ReduceOp::PRODUCT:
      return mscProd;
    case c10d::ReduceOp::MIN:
      return mscMin;
    case c10d::ReduceOp::MAX:
      return mscMax;
    default:
      TORCH_CHECK(false, "megascale ", where, ": reduce op ", static_cast<int>(op.op_),
                  " is not supported here (SUM, AVG, PRODUCT, MIN, MAX; all_reduce also takes BAND, BOR, BXOR)");
  }
}

// One dense CPU tensor, as every call here takes.
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "megascale ", op, ": expects one tensor per process, got ", tensors.size());
  return tensors[0];
}

void checkTensor(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().is_cpu(), "megascale ", op, ": tensors must be on the CPU, got ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided && t.is_contiguous(), "megascale ", op,
              ": tensors must be dense and contiguous");
}

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }
size_t bytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// megascale's setup errors become torch errors that name what failed.
template <typename F>
auto calling(const char* op, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    TORCH_CHECK(false, "megascale ", op, ": ", e.what());
  }
}

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// Whether every rank shares this host (then shared memory carries the collectives), in O(1) store operations
// per rank: rank 0 publishes its host name, each rank counts itself in, and the last one opens the gate.
int localSizeThroughStore(Store& store, int rank, int size, std::chrono::milliseconds timeout) {
  if (rank == 0) store.set("megascale/host0", hostName());
  const bool here = store.get("megascale/host0", timeout) == hostName();
  if (!here) store.add("megascale/elsewhere", 1);
  if (store.add("megascale/arrived", 1) == size) store.set("megascale/counted", "1");
  store.wait({"megascale/counted"}, timeout);
  return store.add("megascale/elsewhere", 0) == 0 ? size : -1;
}

// MEGASCALE_JOB_SECRET, else a fresh one from rank 0 through torch's store (readable by whoever reaches that
// store, as everything of a Gloo group is).
std::string groupSecret(Store& store, int rank, std::chrono::milliseconds timeout) {
  const std::string given = config::getString("MEGASCALE_JOB_SECRET");
  if (!given.empty()) return jobSecretFromHex(given, "MEGASCALE_JOB_SECRET");
  if (rank == 0) {
    std::string secret(32, '\0');
    randomBytes(secret.data(), secret.size());
    store.set("megascale/secret", toHex(secret.data(), secret.size()));
    return secret;
  }
  return jobSecretFromHex(store.get("megascale/secret", timeout), "the group secret rank 0 published");
}

std::shared_ptr<Communicator> joinGroup(const c10::intrusive_ptr<c10d::Store>& torch_store, int rank, int size,
                                        std::chrono::milliseconds timeout) {
  CommunicatorOptions options = CommunicatorOptions::fromEnvironment();
  if (!config::isSet("MEGASCALE_TIMEOUT_MS") && timeout.count() > 0) options.timeout = timeout;
  auto store = std::make_shared<TorchStore>(torch_store, rank);
  const std::string secret = groupSecret(*store, rank, options.timeout);
  options.local_size = localSizeThroughStore(*store, rank, size, options.timeout);
  if (options.transport_options.bind_address.empty()) {
    const char* master = std::getenv("MASTER_ADDR");  // torch's, not a megascale knob
    options.transport_options.bind_address = listenAddressFor(size, options.local_size, master ? master : "");
  }
  return Communicator::createOnStore(store, secret, "torch.distributed group", rank, size, std::move(options));
}

}  // namespace

ProcessGroupMegascale::ProcessGroupMegascale(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                             std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size),
      comm_(calling("init", [&] { return joinGroup(store, rank, size, timeout); })),
      completer_([this](std::stop_token stop) { completionLoop(stop); }) {}

ProcessGroupMegascale::~ProcessGroupMegascale() {
  flushPointToPoint();
  completer_.request_stop();
  pending_cv_.notify_all();
  completer_.join();  // completes what is queued first; the communicator's destructor waits for the rest
}

void ProcessGroupMegascale::completionLoop(std::stop_token stop) {
  while (true) {
    c10::intrusive_ptr<MegascaleWork> next;
    {
      std::unique_lock lock(pending_mutex_);
      pending_cv_.wait(lock, stop, [&] { return !pending_.empty(); });
      if (pending_.empty()) return;  // stopped with nothing left
      next = pending_.front();
      pending_.pop_front();
    }
    next->waitAndComplete(false);
  }
}

template <typename F>
std::shared_ptr<megascale::Work> ProcessGroupMegascale::issue(const char* op, F&& f) {
  flushPointToPoint();
  return calling(op, f);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::track(c10d::OpType type, std::shared_ptr<PendingOp> op,
                                                            std::vector<at::Tensor> outputs,
                                                            std::vector<at::Tensor> keep_alive,
                                                            std::function<void()> after) {
  auto w = c10::make_intrusive<MegascaleWork>(rank_, type, std::move(op), std::move(outputs), std::move(keep_alive),
                                              std::move(after));
  {
    std::lock_guard lock(pending_mutex_);
    pending_.push_back(w);
  }
  pending_cv_.notify_one();
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::track(c10d::OpType type, std::shared_ptr<megascale::Work> work,
                                                            std::vector<at::Tensor> outputs,
                                                            std::vector<at::Tensor> keep_alive,
                                                            std::function<void()> after) {
  return track(type, std::make_shared<PendingOp>(std::move(work)), std::move(outputs), std::move(keep_alive),
               std::move(after));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::batchPointToPoint(const Communicator::PointToPoint& op,
                                                                        at::Tensor& tensor, c10d::OpType type) {
  TORCH_CHECK(op.peer >= 0 && op.peer < size_ && op.peer != rank_, "megascale ", op.is_send ? "send" : "recv",
              ": rank ", rank_, ": peer ", op.peer, " is not another rank of this group of ", size_);
  std::lock_guard lock(p2p_mutex_);
  if (!p2p_pending_) p2p_pending_ = std::make_shared<PendingOp>([this] { flushPointToPoint(); });
  p2p_ops_.push_back(op);
  return track(type, p2p_pending_, {tensor});
}

void ProcessGroupMegascale::flushPointToPoint() {
  std::lock_guard lock(p2p_mutex_);
  if (p2p_ops_.empty()) return;
  std::shared_ptr<megascale::Work> work;
  try {
    work = comm_->pointToPoint(p2p_ops_);
  } catch (const Error& e) {  // reaches every Work of the batch through its wait()
    work = std::make_shared<megascale::Work>();
    work->finish(Status(e.code(), e.what()));
  }
  p2p_ops_.clear();
  std::exchange(p2p_pending_, nullptr)->issued(std::move(work));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::broadcast(std::vector<at::Tensor>& tensors,
                                                                const c10d::BroadcastOptions& opts) {
  at::Tensor& t = single(tensors, "broadcast");
  checkTensor(t, "broadcast");
  auto work = issue("broadcast", [&] {
    return comm_->broadcast(t.data_ptr(), t.data_ptr(), bytes(t), mscUint8, static_cast<int>(opts.rootRank));
  });
  return track(c10d::OpType::BROADCAST, work, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::allreduce(std::vector<at::Tensor>& tensors,
                                                                const c10d::AllreduceOptions& opts) {
  at::Tensor& t = single(tensors, "all_reduce");
  checkTensor(t, "all_reduce");
  const auto op = opts.reduceOp.op_;
  if (op == c10d::ReduceOp::BAND || op == c10d::ReduceOp::BOR || op == c10d::ReduceOp::BXOR) {
    return bitwiseAllReduce(t, op);
  }
  const mscDataType_t type = reductionType(t, "all_reduce");
  const mscRedOp_t msc_op = reductionOp(opts.reduceOp, "all_reduce");
  auto work = issue("all_reduce", [&] { return comm_->allReduce(t.data_ptr(), t.data_ptr(), count(t), type, msc_op); });
  return track(c10d::OpType::ALLREDUCE, work, tensors);
}

// Bitwise ops are rare (flags, masks): gather every rank's tensor and combine here, in rank order.
c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::bitwiseAllReduce(at::Tensor& tensor,
                                                                       c10d::ReduceOp::RedOpType op) {
  TORCH_CHECK(at::isIntegralType(tensor.scalar_type(), /*includeBool=*/true), "megascale all_reduce: BAND, BOR and ",
              "BXOR need an integer or bool tensor, got ", tensor.scalar_type());
  at::Tensor gathered = at::empty({size_, tensor.numel()}, tensor.options());
  auto work = issue("all_reduce",
                    [&] { return comm_->allGather(tensor.data_ptr(), gathered.data_ptr(), bytes(tensor), mscUint8); });
  at::Tensor out = tensor;
  auto combine = [gathered, out, op]() mutable {
    at::Tensor acc = gathered[0].clone();
    for (int64_t r = 1; r < gathered.size(0); ++r) {
      if (op == c10d::ReduceOp::BAND) acc.bitwise_and_(gathered[r]);
      if (op == c10d::ReduceOp::BOR) acc.bitwise_or_(gathered[r]);
      if (op == c10d::ReduceOp::BXOR) acc.bitwise_xor_(gathered[r]);
    }
    out.view({-1}).copy_(acc);
  };
  return track(c10d::OpType::ALLREDUCE, work, {tensor}, {gathered}, combine);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::reduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::ReduceOptions& opts) {
  at::Tensor& t = single(tensors, "reduce");
  checkTensor(t, "reduce");
  const mscDataType_t type = reductionType(t, "reduce");
  const mscRedOp_t op = reductionOp(opts.reduceOp, "reduce");
  auto work = issue("reduce", [&] {
    return comm_->reduce(t.data_ptr(), t.data_ptr(), count(t), type, op, static_cast<int>(opts.rootRank));
  });
  return track(c10d::OpType::REDUCE, work, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                                std::vector<at::Tensor>& inputs,
                                                                const c10d::AllgatherOptions&) {
  at::Tensor& in = single(inputs, "all_gather");
  checkTensor(in, "all_gather");
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
              "megascale all_gather: expects one list of ", size_, " output tensors");
  for (const at::Tensor& o : outputs[0]) {
    TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                "megascale all_gather: every output tensor must match the input's size and dtype");
    TORCH_CHECK(o.device().is_cpu(), "megascale all_gather: tensors must be on the CPU");
  }
  at::Tensor staging = at::empty({size_, in.numel()}, in.options());
  auto work =
      issue("all_gather", [&] { return comm_->allGather(in.data_ptr(), staging.data_ptr(), bytes(in), mscUint8); });
  std::vector<at::Tensor> targets = outputs[0];
  auto scatter_out = [staging, targets]() mutable {
    for (size_t r = 0; r < targets.size(); ++r) targets[r].view({-1}).copy_(staging[static_cast<int64_t>(r)]);
  };
  return track(c10d::OpType::ALLGATHER, work, outputs[0], {in, staging}, scatter_out);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::AllgatherOptions&) {
  checkTensor(input, "_allgather_base");
  checkTensor(output, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "megascale _allgather_base: output must hold world_size x input elements of the input's dtype");
  auto work = issue("_allgather_base",
                    [&] { return comm_->allGather(input.data_ptr(), output.data_ptr(), bytes(input), mscUint8); });
  return track(c10d::OpType::_ALLGATHER_BASE, work, {output}, {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                                     const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = single(outputs, "reduce_scatter");
  checkTensor(out, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
              "megascale reduce_scatter: expects one list of ", size_, " input tensors");
  for (const at::Tensor& i : inputs[0]) {
    TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                "megascale reduce_scatter: every input tensor must match the output's size and dtype");
  }
  at::Tensor staging = at::empty({size_, out.numel()}, out.options());
  for (int r = 0; r < size_; ++r) staging[r].copy_(inputs[0][static_cast<size_t>(r)].reshape({-1}));
  return _reduce_scatter_base(out, staging, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                           const c10d::ReduceScatterOptions& opts) {
  checkTensor(input, "reduce_scatter");
  checkTensor(output, "reduce_scatter");
  TORCH_CHECK(input.numel() == output.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "megascale reduce_scatter: input must hold world_size x output elements of the output's dtype");
  const mscDataType_t type = reductionType(output, "reduce_scatter");
  const mscRedOp_t op = reductionOp(opts.reduceOp, "reduce_scatter");
  auto work = issue("reduce_scatter",
                    [&] { return comm_->reduceScatter(input.data_ptr(), output.data_ptr(), count(output), type, op); });
  return track(c10d::OpType::_REDUCE_SCATTER_BASE, work, {output}, {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                    std::vector<int64_t>& output_split_sizes,
                                                                    std::vector<int64_t>& input_split_sizes,
                                                                    const c10d::AllToAllOptions&) {
  checkTensor(input, "all_to_all");
  checkTensor(output, "all_to_all");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "megascale all_to_all: input and output dtypes differ");
  const int64_t rows_in = input.dim() > 0 ? input.size(0) : 1, rows_out = output.dim() > 0 ? output.size(0) : 1;
  const size_t row_in = rows_in > 0 ? bytes(input) / static_cast<size_t>(rows_in) : 0;
  const size_t row_out = rows_out > 0 ? bytes(output) / static_cast<size_t>(rows_out) : 0;
  if (input_split_sizes.empty() && output_split_sizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && rows_in % size_ == 0,
                "megascale all_to_all: equal splits need input and output of the same size, divisible by world size");
    auto work = issue("all_to_all", [&] {
      return comm_->allToAll(input.data_ptr(), output.data_ptr(), bytes(input) / static_cast<size_t>(size_), mscUint8);
    });
    return track(c10d::OpType::ALLTOALL_BASE, work, {output}, {input});
  }
  // Unequal splits: the library's all-to-allv over bytes, each peer's block placed by the prefix sums.
  auto rows = [&](const std::vector<int64_t>& splits, int64_t total, const char* which) {
    std::vector<int64_t> r = splits.empty() ? std::vector<int64_t>(size_, total / size_) : splits;
    TORCH_CHECK(r.size() == static_cast<size_t>(size_), "megascale all_to_all: ", which, " splits need ", size_,
                " entries");
    int64_t sum = 0;
    for (int64_t v : r) {
      TORCH_CHECK(v >= 0, "megascale all_to_all: ", which, " split of ", v, " rows");
      sum += v;
    }
    TORCH_CHECK(sum == total, "megascale all_to_all: ", which, " splits add up to ", sum, ", the tensor has ", total);
    return r;
  };
  const std::vector<int64_t> in_rows = rows(input_split_sizes, rows_in, "input");
  const std::vector<int64_t> out_rows = rows(output_split_sizes, rows_out, "output");
  std::vector<size_t> send_counts(size_), send_displs(size_), recv_counts(size_), recv_displs(size_);
  size_t in_offset = 0, out_offset = 0;
  for (int peer = 0; peer < size_; ++peer) {
    send_counts[peer] = static_cast<size_t>(in_rows[peer]) * row_in;
    recv_counts[peer] = static_cast<size_t>(out_rows[peer]) * row_out;
    send_displs[peer] = in_offset;
    recv_displs[peer] = out_offset;
    in_offset += send_counts[peer];
    out_offset += recv_counts[peer];
  }
  auto work = issue("all_to_all", [&] {
    return comm_->allToAllv(input.data_ptr(), send_counts.data(), send_displs.data(), output.data_ptr(),
                            recv_counts.data(), recv_displs.data(), mscUint8);
  });
  return track(c10d::OpType::ALLTOALL_BASE, work, {output}, {input});
}

// Messages between two ranks match in the order they were posted; torch's tags are not used.
c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::send(std::vector<at::Tensor>& tensors, int dst_rank, int) {
  at::Tensor& t = single(tensors, "send");
  checkTensor(t, "send");
  return batchPointToPoint({true, t.data_ptr(), bytes(t), mscUint8, dst_rank}, t, c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::recv(std::vector<at::Tensor>& tensors, int src_rank, int) {
  at::Tensor& t = single(tensors, "recv");
  checkTensor(t, "recv");
  return batchPointToPoint({false, t.data_ptr(), bytes(t), mscUint8, src_rank}, t, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMegascale::barrier(const c10d::BarrierOptions&) {
  auto work = issue("barrier", [&] { return comm_->barrier(); });
  return track(c10d::OpType::BARRIER, work, {});
}

}  // namespace megascale::pytorch
