#include "backends/nccl/process_group_nccl.h"

#include <fmt/format.h>
#include <nccl.h>

#include <cstring>

#include "backends/nccl/cuda_device.h"
#include "backends/nccl/nccl_collectives.h"
#include "backends/nccl/nccl_work.h"
#include "core/env.h"
#include "core/error.h"
#include "core/half.h"
#include "discovery/launch_env.h"
#include "store/store.h"

namespace collie {
namespace {

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::Int8:
      return ncclInt8;
    case DType::UInt8:
      return ncclUint8;
    case DType::Int32:
      return ncclInt32;
    case DType::UInt32:
      return ncclUint32;
    case DType::Int64:
      return ncclInt64;
    case DType::UInt64:
      return ncclUint64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
  }
  return ncclFloat32;
}

// NCCL wants the PreMulSum scalar in the op's dtype (integers truncate, as torch does).
void premul_scalar(void* out, DType d, double f) {
  switch (d) {
    case DType::Int8:
      *static_cast<int8_t*>(out) = static_cast<int8_t>(f);
      break;
    case DType::UInt8:
      *static_cast<uint8_t*>(out) = static_cast<uint8_t>(f);
      break;
    case DType::Int32:
      *static_cast<int32_t*>(out) = static_cast<int32_t>(f);
      break;
    case DType::UInt32:
      *static_cast<uint32_t*>(out) = static_cast<uint32_t>(f);
      break;
    case DType::Int64:
      *static_cast<int64_t*>(out) = static_cast<int64_t>(f);
      break;
    case DType::UInt64:
      *static_cast<uint64_t*>(out) = static_cast<uint64_t>(f);
      break;
    case DType::Float16:
      *static_cast<Half*>(out) = Half::from_float(static_cast<float>(f));
      break;
    case DType::BFloat16:
      *static_cast<BFloat16*>(out) = BFloat16::from_float(static_cast<float>(f));
      break;
    case DType::Float32:
      *static_cast<float*>(out) = static_cast<float>(f);
      break;
    case DType::Float64:
      *static_cast<double*>(out) = f;
      break;
  }
}

}  // namespace

std::string cuda_unavailable_reason() { return device::cuda_unavailable_line(query_cuda_state()); }

const Capabilities& ProcessGroupNCCL::declared_capabilities() {
  static const Capabilities caps =
      capabilities_from("nccl", nccl_ops(),
                        OpCapability{.cpu = false,
                                     .cuda = true,
                                     .dtypes = kAllDTypeBits,
                                     .reduce_ops = bit(ReduceOp::Sum) | bit(ReduceOp::Prod) |
                                                   bit(ReduceOp::Min) | bit(ReduceOp::Max) |
                                                   bit(ReduceOp::Avg) | bit(ReduceOp::PreMulSum)});
  return caps;
}

ProcessGroupNCCL::ProcessGroupNCCL(GroupInfo info, const Env& env) : ProcessGroup(std::move(info)) {
  const std::string where =
      fmt::format("[Rank {}] nccl group {} '{}'", rank(), this->info().name, this->info().desc);
  const device::CudaState cuda = query_cuda_state();
  if (std::string why = device::cuda_unavailable_line(cuda); !why.empty()) {
    throw DeviceError(fmt::format("{}: {}", where, why));
  }
  if (!this->info().store) {
    throw BackendError(fmt::format("{}: needs a store to exchange the NCCL unique id", where));
  }
  const Env& e = env;
  const LaunchEnv le = detect_launch_env(e);
  const device::DeviceChoice choice = device::choose_cuda_device(
      cuda.count, le.local_rank, rank(), e.get("COLLIE_CUDA_DEVICE"), cuda.visible_devices);
  if (!choice.error.empty()) throw DeviceError(fmt::format("{}: {}", where, choice.error));
  const int device = choice.index;

  comm_ = std::make_shared<NcclCommState>();
  comm_->device = device;
  check_cuda(cudaSetDevice(device), "cudaSetDevice", device);
  ncclUniqueId id;
  Store& store = *this->info().store;
  if (rank() == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      throw BackendError(
          fmt::format("{}: ncclGetUniqueId failed: {}", where, ncclGetErrorString(r)));
    }
    store.set("nccl_unique_id", Bytes(reinterpret_cast<const uint8_t*>(&id),
                                      reinterpret_cast<const uint8_t*>(&id) + sizeof(id)));
  } else {
    const Bytes b = store.get("nccl_unique_id");
    if (b.size() != sizeof(id)) {
      throw BackendError(fmt::format("{}: the store holds a unique id of {} bytes, expected {}",
                                     where, b.size(), sizeof(id)));
    }
    std::memcpy(&id, b.data(), sizeof(id));
  }
  if (ncclResult_t r = ncclCommInitRank(&comm_->comm, size(), id, rank()); r != ncclSuccess) {
    throw BackendError(fmt::format("{}: ncclCommInitRank on device {} failed: {} ({})", where,
                                   device, ncclGetErrorString(r), ncclGetLastError(nullptr)));
  }
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate",
             device);
  check_cuda(cudaMalloc(&scratch_, sizeof(float)), "cudaMalloc (barrier scratch)", device);
  runtime_ = std::make_unique<CudaRuntime>(device, stream_);
}

ProcessGroupNCCL::~ProcessGroupNCCL() { shutdown(); }

void ProcessGroupNCCL::shutdown() {
  if (shut_down_ || !comm_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lk(comm_->mu);
    if (!comm_->aborted) {
      // Destroy waits for queued work; abort instead when the stream is still busy.
      if (cudaStreamQuery(stream_) == cudaSuccess) {
        ncclCommDestroy(comm_->comm);
      } else {
        ncclCommAbort(comm_->comm);
      }
      comm_->abort_reason = "the group was shut down";
      comm_->aborted.store(true, std::memory_order_release);
    }
  }
  if (scratch_) cudaFree(scratch_);
  if (stream_) cudaStreamDestroy(stream_);
  scratch_ = nullptr;
  stream_ = nullptr;
}

const Capabilities& ProcessGroupNCCL::capabilities() const { return declared_capabilities(); }

std::string ProcessGroupNCCL::label(const OpCall& c) const {
  return fmt::format("[Rank {}] nccl {} #{} (group {} '{}')", rank(), op_name(c.type), c.seq,
                     info().name, info().desc);
}

std::shared_ptr<Work> ProcessGroupNCCL::run(const OpCall& call) {
  if (shut_down_) {
    throw BackendError(fmt::format("{}: the group was shut down; create a new one", label(call)));
  }
  cudaSetDevice(comm_->device);
  // An op's deadline (NcclWork::progress, on any polling thread) may abort the communicator,
  // and ncclCommAbort frees it: no op is enqueued on it after. Read without the lock; no lock is
  // held while NCCL enqueues (as torch's ProcessGroupNCCL): an enqueue that blocks (a lazy
  // connection to a peer that never comes) must stay abortable from the watchdog's thread.
  if (comm_->aborted.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(comm_->mu);
    throw BackendError(comm_->aborted_error(label(call)));
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream_, &capture);
  if (capture == cudaStreamCaptureStatusActive) {
    // Recorded into a CUDA graph (CudaRuntime::begin_capture): the op runs when the graph is
    // launched, so there is nothing to wait for now (and events recorded during a capture may not
    // be queried afterwards). The caller synchronizes the runtime after the launches.
    enqueue(call);
    auto captured = std::make_shared<Work>(call.type, call.seq, call.timeout);
    captured->complete();
    return captured;
  }
  auto w = std::make_shared<NcclWork>(call.type, call.seq, call.timeout, label(call), comm_);
  cudaEventRecord(w->start_event(), stream_);
  enqueue(call);
  cudaEventRecord(w->end_event(), stream_);
  return w;
}

void ProcessGroupNCCL::enqueue(const OpCall& c) {
  const TensorView& t = c.input.data ? c.input : c.output;
  const ncclDataType_t dt = nccl_type(t.dtype);
  ncclComm_t comm = comm_->comm;
  ncclRedOp_t op = ncclSum;
  bool custom_op = false;
  if (has_reduce_op(c.type)) {
    switch (c.reduce_op) {
      case ReduceOp::Prod:
        op = ncclProd;
        break;
      case ReduceOp::Min:
        op = ncclMin;
        break;
      case ReduceOp::Max:
        op = ncclMax;
        break;
      case ReduceOp::Avg:
        op = ncclAvg;
        break;
      case ReduceOp::PreMulSum: {
        alignas(8) unsigned char scalar[8] = {};  // the factor in the op's dtype
        premul_scalar(scalar, t.dtype, c.premul_factor);
        ncclRedOpCreatePreMulSum(&op, scalar, dt, ncclScalarHostImmediate, comm);
        custom_op = true;
        break;
      }
      default:
        op = ncclSum;
        break;
    }
  }
  const auto [fn, r] = nccl_issue(NcclOpArgs{c, comm, stream_, dt, op, rank(), size(), scratch_});
  if (custom_op) ncclRedOpDestroy(op, comm);
  if (r != ncclSuccess) {
    throw BackendError(fmt::format("{}: {} failed: {} ({}); check the arguments on every rank",
                                   label(c), fn, ncclGetErrorString(r), ncclGetLastError(comm)));
  }
}

}  // namespace collie
