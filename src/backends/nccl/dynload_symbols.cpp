// The CUDA runtime and NCCL functions the NCCL backend calls, defined here so that nothing links
// libcudart or libnccl: each forwards to the library dynload.h loaded at first use, or returns an
// error code when it is missing (the backend has already said why, in one line, before any group
// is created: cuda_unavailable_reason). A call to a function not listed here fails the link with
// "undefined reference to cudaX": add one line below.
// The definitions take the names the headers give (a header macro such as cudaMemcpyAsync ->
// cudaMemcpyAsync_ptsz applies to the definition and to the looked-up name alike), and are hidden
// like every module symbol, so libcollie.so never exports them to a process that has its own
// libcudart (PyTorch).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "backends/nccl/dynload.h"

namespace {

using collie::dynload::Library;

#define COLLIE_DYNLOAD_STR2(x) #x
#define COLLIE_DYNLOAD_STR(x) COLLIE_DYNLOAD_STR2(x)

template <typename Fn>
Fn resolve(Library lib, const char* name) {
  return reinterpret_cast<Fn>(collie::dynload::symbol(lib, name));
}

// What an error-string function returns when it cannot ask the library: why the library is
// missing, or that it lacks a function (an older release). Kept for the life of the process.
std::string describe_missing(Library lib) {
  std::string line = collie::dynload::missing_line(lib);
  if (!line.empty()) return line;
  return collie::dynload::soname(lib) + " at " + collie::dynload::loaded_path(lib) +
         " lacks a function collie calls; it is older than the release collie was built with";
}
const char* missing_text(Library lib) {
  static const std::string cudart = describe_missing(Library::CudaRuntime);
  static const std::string nccl = describe_missing(Library::Nccl);
  return lib == Library::Nccl ? nccl.c_str() : cudart.c_str();
}

}  // namespace

#define COLLIE_FORWARD(lib, ret, name, params, args, missing)                              \
  ret name params {                                                                        \
    static const auto fn = resolve<ret(*) params>(Library::lib, COLLIE_DYNLOAD_STR(name)); \
    return fn ? fn args : (missing);                                                       \
  }
#define CUDA_FN(name, params, args) \
  COLLIE_FORWARD(CudaRuntime, cudaError_t, name, params, args, cudaErrorSharedObjectInitFailed)
#define NCCL_FN(name, params, args) \
  COLLIE_FORWARD(Nccl, ncclResult_t, name, params, args, ncclSystemError)

extern "C" {

// clang-format off
CUDA_FN(cudaDriverGetVersion, (int* v), (v))
CUDA_FN(cudaRuntimeGetVersion, (int* v), (v))
CUDA_FN(cudaGetDeviceCount, (int* n), (n))
CUDA_FN(cudaGetDeviceProperties, (cudaDeviceProp* p, int d), (p, d))
CUDA_FN(cudaSetDevice, (int d), (d))
CUDA_FN(cudaGetLastError, (void), ())
CUDA_FN(cudaMalloc, (void** p, size_t n), (p, n))
CUDA_FN(cudaFree, (void* p), (p))
CUDA_FN(cudaMemGetInfo, (size_t* free, size_t* total), (free, total))
CUDA_FN(cudaMemcpyAsync, (void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st),
        (d, s, n, k, st))
CUDA_FN(cudaMemsetAsync, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s))
CUDA_FN(cudaStreamCreateWithFlags, (cudaStream_t* s, unsigned int f), (s, f))
CUDA_FN(cudaStreamDestroy, (cudaStream_t s), (s))
CUDA_FN(cudaStreamSynchronize, (cudaStream_t s), (s))
CUDA_FN(cudaStreamQuery, (cudaStream_t s), (s))
CUDA_FN(cudaStreamIsCapturing, (cudaStream_t s, cudaStreamCaptureStatus* c), (s, c))
CUDA_FN(cudaStreamBeginCapture, (cudaStream_t s, cudaStreamCaptureMode m), (s, m))
CUDA_FN(cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t* g), (s, g))
CUDA_FN(cudaEventCreate, (cudaEvent_t* e), (e))
CUDA_FN(cudaEventDestroy, (cudaEvent_t e), (e))
CUDA_FN(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
CUDA_FN(cudaEventQuery, (cudaEvent_t e), (e))
CUDA_FN(cudaEventSynchronize, (cudaEvent_t e), (e))
CUDA_FN(cudaEventElapsedTime, (float* ms, cudaEvent_t a, cudaEvent_t b), (ms, a, b))
CUDA_FN(cudaGraphInstantiate, (cudaGraphExec_t* x, cudaGraph_t g, unsigned long long f), (x, g, f))
CUDA_FN(cudaGraphLaunch, (cudaGraphExec_t x, cudaStream_t s), (x, s))
CUDA_FN(cudaGraphExecDestroy, (cudaGraphExec_t x), (x))
CUDA_FN(cudaGraphDestroy, (cudaGraph_t g), (g))
COLLIE_FORWARD(CudaRuntime, const char*, cudaGetErrorName, (cudaError_t e), (e),
               missing_text(Library::CudaRuntime))
COLLIE_FORWARD(CudaRuntime, const char*, cudaGetErrorString, (cudaError_t e), (e),
               missing_text(Library::CudaRuntime))

NCCL_FN(ncclGetVersion, (int* v), (v))
NCCL_FN(ncclGetUniqueId, (ncclUniqueId* id), (id))
NCCL_FN(ncclCommInitRank, (ncclComm_t* c, int n, ncclUniqueId id, int r), (c, n, id, r))
NCCL_FN(ncclCommDestroy, (ncclComm_t c), (c))
NCCL_FN(ncclCommAbort, (ncclComm_t c), (c))
NCCL_FN(ncclCommGetAsyncError, (ncclComm_t c, ncclResult_t* e), (c, e))
NCCL_FN(ncclGroupStart, (), ())
NCCL_FN(ncclGroupEnd, (), ())
NCCL_FN(ncclRedOpCreatePreMulSum,
        (ncclRedOp_t* op, void* s, ncclDataType_t t, ncclScalarResidence_t r, ncclComm_t c),
        (op, s, t, r, c))
NCCL_FN(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t c), (op, c))
NCCL_FN(ncclAllReduce, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                        ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st))
NCCL_FN(ncclReduce, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                     int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, root, c, st))
NCCL_FN(ncclBroadcast, (const void* s, void* r, size_t n, ncclDataType_t t, int root,
                        ncclComm_t c, cudaStream_t st), (s, r, n, t, root, c, st))
NCCL_FN(ncclAllGather, (const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c,
                        cudaStream_t st), (s, r, n, t, c, st))
NCCL_FN(ncclReduceScatter, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                            ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st))
NCCL_FN(ncclSend, (const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                   cudaStream_t st), (s, n, t, peer, c, st))
NCCL_FN(ncclRecv, (void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                   cudaStream_t st), (r, n, t, peer, c, st))
COLLIE_FORWARD(Nccl, const char*, ncclGetErrorString, (ncclResult_t e), (e),
               missing_text(Library::Nccl))
COLLIE_FORWARD(Nccl, const char*, ncclGetLastError, (ncclComm_t c), (c),
               missing_text(Library::Nccl))
// clang-format on

}  // extern "C"
