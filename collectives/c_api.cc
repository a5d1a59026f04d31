// The C API: one try/catch per entry point maps every C++ error to a code and a thread-local message;
// nothing throws across it and nothing aborts the process.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/launch_env.h"
#include "bootstrap/launcher_channel.h"
#include "bootstrap/local_address.h"
#include "bootstrap/tcp_store_server.h"
#include "collectives/communicator.h"
#include "common/config.h"
#include "common/log.h"
#include "megascale/megascale.h"

struct mscComm {
  std::shared_ptr<megascale::Communicator> impl;
};

namespace megascale {
namespace {

thread_local std::string t_last_error;

mscResult_t toResult(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return mscSuccess;
    case ErrorCode::kInvalidArgument: return mscInvalidArgument;
    case ErrorCode::kTimeout: return mscTimeout;
    case ErrorCode::kPeerLost: return mscRemoteError;
    case ErrorCode::kSystem: return mscSystemError;
    case ErrorCode::kInternal: return mscInternalError;
    case ErrorCode::kAborted: return mscAborted;
    case ErrorCode::kAuthFailed: return mscAuthError;
    case ErrorCode::kMismatch: return mscMismatch;
    case ErrorCode::kUnavailable: return mscUnavailable;
  }
  return mscInternalError;
}

mscResult_t fail(ErrorCode code, const std::string& message) {
  t_last_error = message;
  return toResult(code);
}

mscResult_t fromStatus(const Status& s) { return s.isOk() ? mscSuccess : fail(s.code(), s.message()); }

template <typename Body>
mscResult_t guarded(Body body) {
  try {
    return body();
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::kSystem, "out of memory");
  } catch (const std::exception& e) {
    return fail(ErrorCode::kInternal, e.what());
  }
}

Communicator* commOrThrow(mscComm_t comm, const char* op) {
  if (comm == nullptr || !comm->impl) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": null communicator");
  }
  return comm->impl.get();
}

// Operations issued between mscGroupStart and mscGroupEnd, per thread, in issue order.
struct GroupedOp {
  mscComm_t comm;
  bool is_p2p;
  Communicator::PointToPoint p2p;
  std::function<std::shared_ptr<Work>()> collective;
};
thread_local int t_group_depth = 0;
thread_local std::vector<GroupedOp> t_grouped;

// Collectives outside a group are issued now; inside a group, when the outermost group ends.
// A template, so the ungrouped path (the common one) makes no std::function and allocates nothing here.
template <typename Call>
mscResult_t issue(mscComm_t comm, const char* op, Call call) {
  return guarded([&] {
    commOrThrow(comm, op);
    if (t_group_depth > 0) {
      t_grouped.push_back(GroupedOp{comm, false, {}, std::move(call)});
      return mscSuccess;
    }
    std::shared_ptr<Work> work = call();
    if (work->test()) return fromStatus(work->status());  // failed fast (broken communicator)
    return mscSuccess;
  });
}

mscResult_t issuePointToPoint(mscComm_t comm, const char* op, Communicator::PointToPoint p) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, op);
    if (t_group_depth > 0) {
      t_grouped.push_back(GroupedOp{comm, true, p, nullptr});
      return mscSuccess;
    }
    std::shared_ptr<Work> work = c->pointToPoint({p});
    if (work->test()) return fromStatus(work->status());
    return mscSuccess;
  });
}

std::string advertisedHost() {
  std::string configured = config::getString("MEGASCALE_TCP_IFADDR");
  if (!configured.empty()) return configured;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    std::string local = localAddressToward(name, 1);
    if (local != "0.0.0.0") return local;
  }
  return "127.0.0.1";
}

mscResult_t createComm(mscComm_t* out, const UniqueId& id, int rank, int nranks, CommunicatorOptions options) {
  if (out == nullptr) throw Error(ErrorCode::kInvalidArgument, "comm init: null output pointer");
  *out = nullptr;
  auto comm = std::make_unique<mscComm>();
  comm->impl = Communicator::create(id, rank, nranks, std::move(options));
  *out = comm.release();
  return mscSuccess;
}

}  // namespace
}  // namespace megascale

using namespace megascale;

extern "C" {

mscResult_t mscGetVersion(int* version) {
  if (version == nullptr) return fail(ErrorCode::kInvalidArgument, "mscGetVersion: null pointer");
  *version = MSC_VERSION_CODE;
  return mscSuccess;
}

const char* mscGetErrorString(mscResult_t result) {
  switch (result) {
    case mscSuccess: return "no error";
    case mscInvalidArgument: return "invalid argument";
    case mscTimeout: return "timeout";
    case mscRemoteError: return "remote peer lost or misbehaved";
    case mscSystemError: return "system error";
    case mscInternalError: return "internal error";
    case mscAborted: return "communicator aborted";
    case mscAuthError: return "authentication failed";
    case mscMismatch: return "ranks disagree on the operation";
    case mscUnavailable: return "unavailable in this build or on this machine";
    case mscInProgress: return "operation in progress";
    default: return "unknown result code";
  }
}

const char* mscGetLastError(void) { return t_last_error.c_str(); }

mscResult_t mscGetUniqueId(mscUniqueId* out) {
  return guarded([&] {
    if (out == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscGetUniqueId: null pointer");
    UniqueId id = UniqueId::generate("tcp://127.0.0.1:1");
    TcpStoreServer& server = startProcessStoreServer(id.secret, "0.0.0.0", 0);
    id.store_url = "tcp://" + advertisedHost() + ":" + std::to_string(server.port());
    std::string text = id.serialize();
    std::memset(out->internal, 0, sizeof(out->internal));
    std::memcpy(out->internal, text.data(), text.size());
    return mscSuccess;
  });
}

mscResult_t mscCommInitRank(mscComm_t* comm, int nranks, mscUniqueId id, int rank) {
  return guarded([&] {
    std::string text(id.internal, strnlen(id.internal, sizeof(id.internal)));
    return createComm(comm, UniqueId::parse(text), rank, nranks, CommunicatorOptions::fromEnvironment());
  });
}

mscResult_t mscCommInitFromEnv(mscComm_t* comm) {
  return guarded([&] {
    if (comm == nullptr) throw Error(ErrorCode::kInvalidArgument, "comm init: null output pointer");
    *comm = nullptr;
    auto wrapper = std::make_unique<mscComm>();
    wrapper->impl = Communicator::createFromEnvironment(CommunicatorOptions::fromEnvironment());
    *comm = wrapper.release();
    return mscSuccess;
  });
}

mscResult_t mscCommSplit(mscComm_t comm, int color, int key, mscComm_t* newcomm) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommSplit");
    if (newcomm == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscCommSplit: null output pointer");
    *newcomm = nullptr;
    std::shared_ptr<Communicator> child = c->split(color, key);
    if (child) *newcomm = new mscComm{std::move(child)};
    return mscSuccess;
  });
}

mscResult_t mscCommDestroy(mscComm_t comm) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommDestroy");
    Status s = c->synchronize();
    delete comm;
    return fromStatus(s);
  });
}

mscResult_t mscCommAbort(mscComm_t comm) {
  return guarded([&] {
    commOrThrow(comm, "mscCommAbort")->abort();
    delete comm;
    return mscSuccess;
  });
}

mscResult_t mscCommGetAsyncError(mscComm_t comm, mscResult_t* async_error) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommGetAsyncError");
    if (async_error == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscCommGetAsyncError: null pointer");
    Status s = c->asyncError();
    if (!s.isOk()) t_last_error = s.message();
    *async_error = !s.isOk() ? toResult(s.code()) : (c->busy() ? mscInProgress : mscSuccess);
    return mscSuccess;
  });
}

mscResult_t mscCommCount(const mscComm_t comm, int* count) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommCount");
    if (count == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscCommCount: null pointer");
    *count = c->size();
    return mscSuccess;
  });
}

mscResult_t mscCommUserRank(const mscComm_t comm, int* rank) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommUserRank");
    if (rank == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscCommUserRank: null pointer");
    *rank = c->rank();
    return mscSuccess;
  });
}

mscResult_t mscCommGetDescription(const mscComm_t comm, char* text, size_t size) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommGetDescription");
    if (text == nullptr || size == 0) throw Error(ErrorCode::kInvalidArgument, "mscCommGetDescription: no buffer");
    std::snprintf(text, size, "%s", c->description().c_str());
    return mscSuccess;
  });
}

mscResult_t mscCommRegister(const mscComm_t comm, void* buff, size_t size, void** handle) {
  return guarded([&] { return fromStatus(commOrThrow(comm, "mscCommRegister")->registerBuffer(buff, size, handle)); });
}

mscResult_t mscCommDeregister(const mscComm_t comm, void* handle) {
  return guarded([&] { return fromStatus(commOrThrow(comm, "mscCommDeregister")->deregisterBuffer(handle)); });
}

mscResult_t mscCommSetName(mscComm_t comm, const char* name) {
  return guarded([&] {
    Communicator* c = commOrThrow(comm, "mscCommSetName");
    if (name == nullptr) throw Error(ErrorCode::kInvalidArgument, "mscCommSetName: null name");
    c->setName(name);
    return mscSuccess;
  });
}

mscResult_t mscHeartbeat(int64_t step, const char* phase) {
  heartbeat::reportStep(step, phase == nullptr ? "" : phase);
  return mscSuccess;
}

mscResult_t mscCommSynchronize(mscComm_t comm) {
  return guarded([&] { return fromStatus(commOrThrow(comm, "mscCommSynchronize")->synchronize()); });
}

mscResult_t mscAllReduce(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscRedOp_t op,
                         mscComm_t comm) {
  return issue(comm, "mscAllReduce", [=] { return comm->impl->allReduce(sendbuff, recvbuff, count, datatype, op); });
}

mscResult_t mscBroadcast(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, int root,
                         mscComm_t comm) {
  return issue(comm, "mscBroadcast", [=] { return comm->impl->broadcast(sendbuff, recvbuff, count, datatype, root); });
}

mscResult_t mscReduce(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscRedOp_t op,
                      int root, mscComm_t comm) {
  return issue(comm, "mscReduce", [=] { return comm->impl->reduce(sendbuff, recvbuff, count, datatype, op, root); });
}

mscResult_t mscAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, mscDataType_t datatype,
                         mscComm_t comm) {
  return issue(comm, "mscAllGather", [=] { return comm->impl->allGather(sendbuff, recvbuff, sendcount, datatype); });
}

mscResult_t mscReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, mscDataType_t datatype,
                             mscRedOp_t op, mscComm_t comm) {
  return issue(comm, "mscReduceScatter",
               [=] { return comm->impl->reduceScatter(sendbuff, recvbuff, recvcount, datatype, op); });
}

mscResult_t mscAllToAll(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscComm_t comm) {
  return issue(comm, "mscAllToAll", [=] { return comm->impl->allToAll(sendbuff, recvbuff, count, datatype); });
}

mscResult_t mscAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                         const size_t recvcounts[], const size_t rdispls[], mscDataType_t datatype, mscComm_t comm) {
  // The arrays are copied now: inside a group the call runs at mscGroupEnd, when the caller may have reused them.
  auto copy = [comm](const size_t* array) {
    if (array == nullptr || comm == nullptr || comm->impl == nullptr) return std::vector<size_t>();
    return std::vector<size_t>(array, array + comm->impl->size());
  };
  return issue(comm, "mscAllToAllv", [=, sc = copy(sendcounts), sd = copy(sdispls), rc = copy(recvcounts),
                                      rd = copy(rdispls)] {
    auto data = [](const std::vector<size_t>& v) { return v.empty() ? nullptr : v.data(); };
    return comm->impl->allToAllv(sendbuff, data(sc), data(sd), recvbuff, data(rc), data(rd), datatype);
  });
}

mscResult_t mscBarrier(mscComm_t comm) {
  return issue(comm, "mscBarrier", [=] { return comm->impl->barrier(); });
}

mscResult_t mscSend(const void* sendbuff, size_t count, mscDataType_t datatype, int peer, mscComm_t comm) {
  return issuePointToPoint(comm, "mscSend",
                           Communicator::PointToPoint{true, const_cast<void*>(sendbuff), count, datatype, peer});
}

mscResult_t mscRecv(void* recvbuff, size_t count, mscDataType_t datatype, int peer, mscComm_t comm) {
  return issuePointToPoint(comm, "mscRecv", Communicator::PointToPoint{false, recvbuff, count, datatype, peer});
}

mscResult_t mscGroupStart(void) {
  ++t_group_depth;
  return mscSuccess;
}

mscResult_t mscGroupEnd(void) {
  if (t_group_depth == 0) return fail(ErrorCode::kInvalidArgument, "mscGroupEnd without mscGroupStart");
  if (--t_group_depth > 0) return mscSuccess;
  std::vector<GroupedOp> ops = std::move(t_grouped);
  t_grouped.clear();
  return guarded([&] {
    // Per communicator: the collectives in issue order, then all its sends and receives as one phase.
    std::vector<mscComm_t> comms;
    for (const GroupedOp& op : ops) {
      if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
    }
    mscResult_t result = mscSuccess;
    for (mscComm_t comm : comms) {
      std::vector<Communicator::PointToPoint> p2p;
      for (const GroupedOp& op : ops) {
        if (op.comm != comm) continue;
        if (op.is_p2p) {
          p2p.push_back(op.p2p);
        } else {
          std::shared_ptr<Work> w = op.collective();
          if (w->test() && !w->status().isOk() && result == mscSuccess) result = fromStatus(w->status());
        }
      }
      if (!p2p.empty()) {
        std::shared_ptr<Work> w = comm->impl->pointToPoint(p2p);
        if (w->test() && !w->status().isOk() && result == mscSuccess) result = fromStatus(w->status());
      }
    }
    return result;
  });
}

}  // extern "C"
