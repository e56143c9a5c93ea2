#include "perf/validation.h"

#include <vector>

#include "perf/data.h"
#include "perf/test_hooks.h"

namespace collie::perf {
namespace {

// 8-byte aligned host storage for any dtype.
struct HostBuffer {
  std::vector<uint64_t> mem;
  explicit HostBuffer(size_t bytes = 0) : mem((bytes + 7) / 8 + 1) {}
  char* data() { return reinterpret_cast<char*>(mem.data()); }
};

}  // namespace

CheckCounts validate(ProcessGroup& pg, device::DeviceRuntime& dev, const CollectiveDescriptor& d,
                     const CallArgs& args, const DataSpec& spec, const Layout& l, int check_iters,
                     const TestHooks& hooks) {
  const int rank = pg.rank();
  const DType dt = spec.dtype;
  const TensorView& send = args.send;
  const TensorView& recv = args.recv;
  const bool host = dev.host_accessible();
  HostBuffer input(host ? 0 : send.nbytes()), got(host ? 0 : recv.nbytes());
  HostBuffer want(recv.nbytes());
  char* in = host ? static_cast<char*>(send.data) : input.data();
  char* out = host ? static_cast<char*>(recv.data) : got.data();
  CheckCounts res;
  for (int c = 0; c < check_iters; ++c) {
    d.init(spec, l, rank, args.root, in);
    if (!host) dev.copy_to_device(send.data, in, send.nbytes());
    if (!args.in_place && d.in_place_api) dev.copy(recv.data, send.data, send.nbytes());
    wait_all(d.run(pg, args));
    const size_t n = d.expected(spec, l, rank, args.root, want.data());
    if (!host) dev.copy_to_host(out, recv.data, n * dtype_size(dt));
    corrupt_if_asked(hooks, rank, out, dt, n);
    const bool approx = d.reduces && args.op == ReduceOp::Avg;
    const CheckResult cr = compare(out, want.data(), n, dt, approx);
    res.wrong += cr.wrong;
    if (res.first_wrong < 0) res.first_wrong = cr.first_offset;
  }
  return res;
}

}  // namespace collie::perf
