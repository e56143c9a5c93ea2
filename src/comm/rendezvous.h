#pragma once
// Rendezvous: turns an init method into (store, rank, world size).
//   env://          MASTER_ADDR, MASTER_PORT (+ rank/world from args or the launcher env); with
//                   neither set, a Slurm job step's own variables (discovery/launcher_rendezvous.h)
//   tcp://HOST:PORT rank 0 serves the TcpStore on HOST:PORT, others connect
// The store server binds the address choose_store_bind() picks (discovery/bind_address.h): never a
// loopback address that remote ranks cannot reach.
//   file:///PATH    a FileStore at PATH shared by all ranks
// After the store is up every rank checks in: duplicate ranks and disagreeing world sizes are
// InvalidArgument, and ranks that do not arrive within the timeout are named in a TimeoutError.
#include <memory>
#include <string>
#include <vector>

#include "core/timeout.h"

namespace collie {

class Env;
class Store;

struct Rendezvous {
  std::shared_ptr<Store> store;  // root store (unprefixed)
  int rank = 0;
  int world_size = 1;
  std::string method;      // "env", "tcp", "file", "store", or a backend's name (self rendezvous)
  std::string store_host;  // host the ranks dialled for the store ("" = none / unknown)
};

struct RendezvousRequest {
  std::string init_method;  // "" = COLLIE_INIT_METHOD or env://
  int rank = -1;            // -1 = from the launcher environment
  int world_size = -1;
  Millis timeout = kDefaultTimeout;
};

Rendezvous rendezvous(const RendezvousRequest& req, const Env& env);

// Every rank in [0, world) calls this with the same `name`; returns when all have. On timeout
// throws TimeoutError "[Rank r] <name>: ranks 1, 3 of 4 did not arrive within T ms".
// One Store::gather request per rank (its timeout reply names the missing ranks), under
// "<name>/barrier"; use a fresh name for each barrier.
void store_barrier(Store& store, const std::string& name, int rank, int world, Millis timeout);

// "1, 3, 5-7": compact, sorted list of ranks for messages.
std::string format_ranks(std::vector<int> ranks);

}  // namespace collie
