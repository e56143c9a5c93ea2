#include "backends/mpi/mpi_runtime.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/reduce_kernel.h"

namespace collie {
namespace {

constexpr ReduceOp kHalfOps[4] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};

// Set once in MpiRuntime(); read by the user-defined ops to recognise the 16-bit float types.
MPI_Datatype g_half = MPI_DATATYPE_NULL;
MPI_Datatype g_bfloat = MPI_DATATYPE_NULL;

template <int I>
void half_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  const DType d = *type == g_bfloat ? DType::BFloat16 : DType::Float16;
  reduce_into(inout, in, static_cast<size_t>(*len), d, kHalfOps[I]);
}

bool g_we_initialized = false;
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

namespace {
struct NamedLevel {
  const char* name;
  int level;
};
constexpr NamedLevel kThreadLevels[] = {{"single", MPI_THREAD_SINGLE},
                                        {"funneled", MPI_THREAD_FUNNELED},
                                        {"serialized", MPI_THREAD_SERIALIZED},
                                        {"multiple", MPI_THREAD_MULTIPLE}};
}  // namespace

int mpi_thread_level_to_request(const Env& env) {
  const std::optional<std::string> v = env.get(kMpiThreadLevelVar);
  if (!v || v->empty()) return MPI_THREAD_SINGLE;
  for (const NamedLevel& l : kThreadLevels) {
    if (*v == l.name) return l.level;
  }
  throw InvalidArgument(fmt::format("{} must be single, funneled, serialized or multiple, got {}",
                                    kMpiThreadLevelVar, quote(*v)));
}

const char* mpi_thread_level_name(int level) {
  for (const NamedLevel& l : kThreadLevels) {
    if (level == l.level) return l.name;
  }
  return "unknown";
}

MpiRuntime& MpiRuntime::get() {
  static MpiRuntime rt;
  return rt;
}

MpiRuntime::MpiRuntime() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    const int rc =
        MPI_Init_thread(nullptr, nullptr, mpi_thread_level_to_request(Env::process()), &provided);
    if (rc != MPI_SUCCESS) {
      throw BackendError(fmt::format(
          "mpi: MPI_Init_thread failed ({}); start the job with mpirun or check the Open MPI "
          "installation",
          mpi_error_string(rc)));
    }
    g_we_initialized = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  thread_level_ = provided;
  thread_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  MPI_Type_contiguous(2, MPI_BYTE, &half_);
  MPI_Type_commit(&half_);
  MPI_Type_contiguous(2, MPI_BYTE, &bfloat_);
  MPI_Type_commit(&bfloat_);
  g_half = half_;
  g_bfloat = bfloat_;
  MPI_Op_create(&half_op<0>, 1, &half_ops_[0]);
  MPI_Op_create(&half_op<1>, 1, &half_ops_[1]);
  MPI_Op_create(&half_op<2>, 1, &half_ops_[2]);
  MPI_Op_create(&half_op<3>, 1, &half_ops_[3]);
}

MPI_Datatype MpiRuntime::datatype(DType d) const {
  switch (d) {
    case DType::Int8:
      return MPI_INT8_T;
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::UInt32:
      return MPI_UINT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::UInt64:
      return MPI_UINT64_T;
    case DType::Float16:
      return half_;
    case DType::BFloat16:
      return bfloat_;
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiRuntime::op(ReduceOp op, DType d) const {
  const bool half = d == DType::Float16 || d == DType::BFloat16;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
    case ReduceOp::PreMulSum:
      return half ? half_ops_[0] : MPI_SUM;
    case ReduceOp::Prod:
      return half ? half_ops_[1] : MPI_PROD;
    case ReduceOp::Min:
      return half ? half_ops_[2] : MPI_MIN;
    case ReduceOp::Max:
      return half ? half_ops_[3] : MPI_MAX;
    case ReduceOp::BAnd:
      return MPI_BAND;
    case ReduceOp::BOr:
      return MPI_BOR;
    case ReduceOp::BXor:
      return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<size_t>(len));
  const size_t cut = s.find_first_of(",\n");
  if (cut != std::string::npos) s.resize(cut);
  return s;
}

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(buf, static_cast<size_t>(len));
}

bool under_mpi_launcher(const Env& env) {
  return env.first_of({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}).has_value();
}

}  // namespace collie
