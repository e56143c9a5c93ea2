#pragma once
// RecordMesh: a full mesh of TCP connections among a group's ranks that carries one small
// fixed-size record from every rank to every other rank per exchange, entirely on the calling
// thread: no progress thread, no queue, one send per peer and a poll/recv until every peer's
// record is in. DETAIL's fingerprint check uses it (debug/fingerprint_exchange.h): a check costs
// about one message latency, where an all_to_all on a backend group also pays that backend's
// progress-thread hand-offs.
//
// Connect: each rank listens on its bind address (discovery/bind_address.h, as the Gloo device
// chooses it), publishes "<tag>/<rank>" = "host port token" in the group store, dials every lower
// rank and accepts every higher one. A connection is kept only when its first frame carries the
// acceptor's random token (which only readers of the group's store know) and a rank of the group
// not seen yet; anything else is closed and ignored.
// Exchange: every rank calls exchange() the same number of times, in the same order; records go
// out before any is read, so no order of arrival can deadlock.
// Failure: a peer that closes its connection gives NetworkError naming it; records missing at the
// deadline give TimeoutError naming the group ranks they were from. Either leaves the mesh broken
// (a late record would shift the stream): later exchanges throw BackendError at once.
// Ownership: owns its sockets (closed on destruction). Thread safety: one thread at a time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/timeout.h"

namespace collie {

class Store;

class RecordMesh {
 public:
  // Connects the mesh; every rank of the group must call it with the same tag and record size.
  // REQUIRES: 0 <= rank < size, record_bytes > 0, `store` shared by the group's ranks,
  // `bind_host` a numeric address of this host that the other ranks can reach.
  // Throws TimeoutError / NetworkError naming the ranks not connected within `timeout`.
  static std::unique_ptr<RecordMesh> connect(std::shared_ptr<Store> store, const std::string& tag,
                                             int rank, int size, size_t record_bytes,
                                             const std::string& bind_host, Millis timeout);
  ~RecordMesh();
  RecordMesh(const RecordMesh&) = delete;
  RecordMesh& operator=(const RecordMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t record_bytes() const { return record_bytes_; }
  bool broken() const { return broken_; }

  // Sends out[p * record_bytes ..] to every peer p (this rank's own slot is not sent) and fills
  // in[p * record_bytes ..] with peer p's record for this rank; in[rank's slot] is left as is.
  // REQUIRES: out and in hold size() * record_bytes() bytes.
  void exchange(const uint8_t* out, uint8_t* in, Millis timeout);

  // Closes every connection (idempotent); later exchanges throw BackendError.
  void close();

 private:
  RecordMesh(int rank, int size, size_t record_bytes);
  [[noreturn]] void fail_timeout(const std::vector<size_t>& got, Millis timeout);

  const int rank_, size_;
  const size_t record_bytes_;
  std::vector<int> fds_;  // per group rank; -1 for this rank
  bool broken_ = false;
};

}  // namespace collie
