#pragma once
// A TcpStore server on 127.0.0.1 (an ephemeral port) and clients of it, as rank 0 hosts the
// store and the other ranks connect in a real job. Thread safety: as TcpStore's.
#include <memory>

#include "store/tcp_store.h"

namespace collie::testing {

struct LocalTcpStore {
  std::shared_ptr<TcpStore> server = [] {
    TcpStoreOptions o;
    o.is_server = true;
    return std::make_shared<TcpStore>(o);
  }();
  // A new client connection (another rank's store). REQUIRES: `server` outlives it.
  std::shared_ptr<TcpStore> client() const {
    TcpStoreOptions o;
    o.port = server->port();
    return std::make_shared<TcpStore>(o);
  }
};

}  // namespace collie::testing
