/// megascale C API, shaped like NCCL's so NCCL users find their way: a unique id from one rank, a
/// communicator per rank, collectives on host buffers, groups, split, abort and asynchronous errors.
/// Every function returns an mscResult_t and never aborts the process; mscGetLastError() gives the message
/// (operation, rank, peer) of the calling thread's last failure.
#ifndef MEGASCALE_MEGASCALE_H_
#define MEGASCALE_MEGASCALE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSC_MAJOR 0
#define MSC_MINOR 1
#define MSC_PATCH 0
#define MSC_VERSION_CODE (MSC_MAJOR * 10000 + MSC_MINOR * 100 + MSC_PATCH)
#define MSC_UNIQUE_ID_BYTES 256
#define MSC_SPLIT_NOCOLOR (-1)

typedef struct {
  char internal[MSC_UNIQUE_ID_BYTES];
} mscUniqueId;

typedef struct mscComm* mscComm_t;

typedef enum {
  mscSuccess = 0,
  mscInvalidArgument = 1,
  mscTimeout = 2,
  mscRemoteError = 3,  /// a peer died, closed, or sent malformed data
  mscSystemError = 4,
  mscInternalError = 5,
  mscAborted = 6,
  mscAuthError = 7,
  mscMismatch = 8,     /// ranks disagree on the operation, count or type
  mscUnavailable = 9,
  mscInProgress = 10,  /// mscCommGetAsyncError: an operation is still running
  mscNumResults = 11,
  mscResultMaxEnum = 0x7fffffff
} mscResult_t;

/// Same numbering as ncclDataType_t.
typedef enum {
  mscInt8 = 0,
  mscUint8 = 1,
  mscInt32 = 2,
  mscUint32 = 3,
  mscInt64 = 4,
  mscUint64 = 5,
  mscFloat16 = 6,
  mscFloat32 = 7,
  mscFloat64 = 8,
  mscBfloat16 = 9,
  mscNumTypes = 10,
  mscDataTypeMaxEnum = 0x7fffffff  /// makes every int a valid value, so bad input is checked, not undefined
} mscDataType_t;

/// Same numbering as ncclRedOp_t.
typedef enum {
  mscSum = 0,
  mscProd = 1,
  mscMax = 2,
  mscMin = 3,
  mscAvg = 4,
  mscNumOps = 5,
  mscRedOpMaxEnum = 0x7fffffff  /// every int is a valid value, so bad input is checked, not undefined
} mscRedOp_t;

/// Ordering: operations on one communicator complete in the order they were issued, like a stream.
/// Calls return once the operation is queued; mscCommSynchronize waits for all of them (up to the
/// communicator's timeout, MEGASCALE_TIMEOUT_MS).

mscResult_t mscGetVersion(int* version);
const char* mscGetErrorString(mscResult_t result);
/// The message of the calling thread's last error ("" if none).
const char* mscGetLastError(void);

/// Creates a job: starts a store server inside this process (listening on all interfaces, a free port) and
/// returns an id that carries its address, a job id and a fresh secret. Give the id to every rank.
mscResult_t mscGetUniqueId(mscUniqueId* id);
mscResult_t mscCommInitRank(mscComm_t* comm, int nranks, mscUniqueId id, int rank);
/// Initializes from the environment: MEGASCALE_* (megascale-run), torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT), Slurm (SLURM_PROCID, SLURM_NTASKS) or Open MPI (OMPI_COMM_WORLD_*).
mscResult_t mscCommInitFromEnv(mscComm_t* comm);
mscResult_t mscCommSplit(mscComm_t comm, int color, int key, mscComm_t* newcomm);
/// Waits for queued operations, then frees the communicator.
mscResult_t mscCommDestroy(mscComm_t comm);
/// Fails all pending operations at once and frees the communicator; never waits for peers.
mscResult_t mscCommAbort(mscComm_t comm);
/// mscSuccess, mscInProgress while operations run, or the error that broke the communicator.
mscResult_t mscCommGetAsyncError(mscComm_t comm, mscResult_t* async_error);
mscResult_t mscCommCount(const mscComm_t comm, int* count);
mscResult_t mscCommUserRank(const mscComm_t comm, int* rank);
/// What took effect for comm, as text: "transport: shm algorithm: auto node-engine: on". Writes at most
/// size bytes including the terminating NUL (truncating); mscInvalidArgument on a null or empty buffer.
mscResult_t mscCommGetDescription(const mscComm_t comm, char* text, size_t size);
/// Registers [buff, buff + size) with comm's transports, as ncclCommRegister: a transport that must register what
/// it moves (RDMA: pinning the pages) then uses this registration for every transfer from or into the range
/// instead of registering and deregistering the buffer per message. *handle names it for mscCommDeregister.
/// Host memory, or device memory where a transport moves it itself. The buffer must stay allocated until it is
/// deregistered. Any thread.
mscResult_t mscCommRegister(const mscComm_t comm, void* buff, size_t size, void** handle);
/// Undoes mscCommRegister; no operation on the range may be queued. mscInvalidArgument for a handle comm did not
/// give or has deregistered already.
mscResult_t mscCommDeregister(const mscComm_t comm, void* handle);
/// Names comm's group ("tp", "dp", ...; up to 8 characters kept) in heartbeats and reports. Default "world", and
/// "split" for a communicator made by mscCommSplit.
mscResult_t mscCommSetName(mscComm_t comm, const char* name);
/// Tells this rank's executor (megascale-run) which step and phase ("forward", "ckpt", ...; up to 8 characters)
/// the rank is in. A few memory stores, no system call: call it as often as you like. The library itself
/// reports every operation it runs. Does nothing when the rank was not started by megascale-run.
mscResult_t mscHeartbeat(int64_t step, const char* phase);

/// Waits until every operation issued so far on comm has completed.
mscResult_t mscCommSynchronize(mscComm_t comm);

mscResult_t mscAllReduce(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscRedOp_t op,
                         mscComm_t comm);
mscResult_t mscBroadcast(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, int root,
                         mscComm_t comm);
mscResult_t mscReduce(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscRedOp_t op,
                      int root, mscComm_t comm);
/// recvbuff holds nranks * sendcount elements.
mscResult_t mscAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, mscDataType_t datatype,
                         mscComm_t comm);
/// sendbuff holds nranks * recvcount elements.
mscResult_t mscReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, mscDataType_t datatype,
                             mscRedOp_t op, mscComm_t comm);
/// Each buffer holds nranks * count elements; block j of sendbuff goes to rank j.
mscResult_t mscAllToAll(const void* sendbuff, void* recvbuff, size_t count, mscDataType_t datatype, mscComm_t comm);
/// All-to-all with a block of its own size per peer, shaped like MPI_Alltoallv: sendcounts[p] elements at
/// sendbuff + sdispls[p] go to rank p; recvcounts[p] elements from rank p land at recvbuff + rdispls[p].
/// Counts and displacements are in elements; each array has the communicator's size. What rank a sends to b
/// must be what b expects from a (else mscMismatch on b).
mscResult_t mscAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                         const size_t recvcounts[], const size_t rdispls[], mscDataType_t datatype, mscComm_t comm);
mscResult_t mscSend(const void* sendbuff, size_t count, mscDataType_t datatype, int peer, mscComm_t comm);
mscResult_t mscRecv(void* recvbuff, size_t count, mscDataType_t datatype, int peer, mscComm_t comm);
mscResult_t mscBarrier(mscComm_t comm);

/// Between GroupStart and GroupEnd, sends and receives are issued together (so a ring of send+recv cannot
/// deadlock); groups nest.
mscResult_t mscGroupStart(void);
mscResult_t mscGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif  // MEGASCALE_MEGASCALE_H_
