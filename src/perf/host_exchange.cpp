#include "perf/host_exchange.h"

namespace collie::perf {

void all_gather_host(ProcessGroup& pg, TensorView in, TensorView out, Millis timeout) {
  AllGatherOptions ao;
  ao.timeout = timeout;
  ao.in_metrics = false;  // perf's bookkeeping, not the user's ops
  device::DeviceRuntime& dev = pg.device_runtime();
  if (dev.host_accessible()) {
    pg.all_gather(in, out, ao)->wait();
    return;
  }
  device::Buffer din = dev.allocate(in.nbytes()), dout = dev.allocate(out.nbytes());
  dev.copy_to_device(din.data(), in.data, in.nbytes());
  pg.all_gather(dev.view(din.data(), in.numel, in.dtype),
                dev.view(dout.data(), out.numel, out.dtype), ao)
      ->wait();
  dev.copy_to_host(out.data, dout.data(), out.nbytes());
}

void broadcast_host(ProcessGroup& pg, TensorView data, int root, Millis timeout) {
  BroadcastOptions bo;
  bo.root = root;
  bo.timeout = timeout;
  bo.in_metrics = false;
  device::DeviceRuntime& dev = pg.device_runtime();
  if (dev.host_accessible()) {
    pg.broadcast(data, bo)->wait();
    return;
  }
  device::Buffer d = dev.allocate(data.nbytes());
  dev.copy_to_device(d.data(), data.data, data.nbytes());
  pg.broadcast(dev.view(d.data(), data.numel, data.dtype), bo)->wait();
  dev.copy_to_host(data.data, d.data(), data.nbytes());
}

}  // namespace collie::perf
