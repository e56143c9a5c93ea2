#pragma once
// Store: the key-value control plane (rendezvous, NCCL unique ids, debug-server addresses, dump
// requests, monitored-barrier arrivals). Never used per collective on the hot path.
//
// Thread safety: every implementation is safe to call from several threads at once.
// Blocking calls (get, wait) wait at most timeout() (or the given timeout) and then throw
// StoreError naming the key(s) and the elapsed time. Non-copyable.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/export.h"
#include "core/timeout.h"

namespace collie {

using Bytes = std::vector<uint8_t>;

COLLIE_API Bytes to_bytes(std::string_view s);
COLLIE_API std::string to_string(const Bytes& b);

class COLLIE_API Store {
 public:
  explicit Store(Millis timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits until key exists (up to timeout()), then returns its value.
  virtual Bytes get(const std::string& key) = 0;
  // Atomically adds delta to the integer stored at key (missing = 0); returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // True when every key exists; never waits.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key exists or the timeout passes (kUseGroupTimeout = timeout()).
  virtual void wait(const std::vector<std::string>& keys, Millis timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, kUseGroupTimeout); }
  // If key's value equals expected (or key is missing and expected is empty) sets desired.
  // Returns the value now stored (desired on success, the current value otherwise).
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // True if the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;
  // Appends to the value at key (creates it when missing).
  virtual void append(const std::string& key, const Bytes& value) = 0;
  // Waits for all keys like get; values in the order of keys.
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys) = 0;
  // REQUIRES: keys.size() == values.size().
  virtual void multi_set(const std::vector<std::string>& keys,
                         const std::vector<Bytes>& values) = 0;

  // One rank's turn of an all-gather of small values through the store (DETAIL's fingerprint
  // exchange): deletes `drop` unless it is empty, sets key = value, then waits up to `timeout`
  // (kUseGroupTimeout = timeout()) for every key of `gather` and returns their values in order.
  // TcpStore sends the three requests in one write and reads the three replies (one round trip);
  // this default makes the calls in turn. A wait that expires throws StoreError naming the keys
  // (the delete and the set have happened by then).
  virtual std::vector<Bytes> set_and_gather(const std::string& drop, const std::string& key,
                                            const Bytes& value,
                                            const std::vector<std::string>& gather, Millis timeout);

  // gather: "every member contributes one value; every member (or member 0) reads them all".
  // Each member m in [0, members) calls it exactly once with the same name, members and read
  // (REQUIRES: a name serves one gather only; members >= 1; 0 <= member < members). It
  // contributes `value` as member m's, then, by `read`:
  //   kAll   waits until every member has contributed; returns every value (index = member)
  //   kRoot  member 0 waits and gets every value; the others return once their value is in
  //   kNone  waits until every member has contributed and returns no values (a barrier)
  //   kColumn every value is `members` cells of one size; member m waits and gets cell m of every
  //          member's value (an all-to-all through the store: each reads only what is its own)
  // When the wait passes `timeout` (kUseGroupTimeout = timeout()) the result is not complete and
  // names the members that had not contributed; nothing is thrown for that (callers word their
  // own error). A contribution that breaks the contract (member out of range, a second call for
  // a member, a different `members`) throws InvalidArgument.
  // Cost on a TcpStore: one request per member; the server's work is O(1) per contribution
  // beyond its payload, the values are joined once, and a reply carries them only to the
  // members that read them. This default (FileStore) uses keys "<name>/..." and costs O(members)
  // requests per member; HashStore and TcpStore implement it natively.
  enum class GatherRead : uint8_t { kAll = 0, kRoot = 1, kNone = 2, kColumn = 3 };
  struct GatherResult {
    // every member contributed before the timeout (true for a member that does not wait)
    bool complete = false;
    std::vector<int> missing;  // when !complete: members that had not contributed, ascending
    // when complete and this member reads: member i's value (kColumn: its cell for this member)
    std::vector<Bytes> values;
  };
  virtual GatherResult gather(const std::string& name, int member, int members, const Bytes& value,
                              GatherRead read, Millis timeout);

  // Another client of the same store with this one's timeout, for a thread that makes blocking
  // calls (get, wait) while other threads keep using this one: a TcpStore serializes requests
  // per connection, so a parked wait would hold up every other caller of that client. TcpStore
  // opens a new connection (REQUIRES: a TcpStore hosting the server outlives its clones),
  // PrefixStore clones its base, HashStore shares its map, FileStore opens the file again.
  virtual std::shared_ptr<Store> clone() = 0;

  // Ends every call in progress on this client (a parked get or wait included) at once with
  // StoreError "... interrupted", and fails every later call on it the same way; for stopping
  // a thread that parks in wait() on a clone() of its own. Other clients of the same store (the
  // original, other clones) keep working. REQUIRES: no one else uses this client (a PrefixStore
  // interrupts its base, which is its own only when it came from clone()). Thread-safe, never
  // blocks, idempotent.
  virtual void interrupt() = 0;

  // True when only the job's own processes can write this store, so what its keys say (rank
  // addresses, for one) was written by a member: a TcpStore whose server requires the job's
  // secret (as the server itself answers when the client authenticates), a HashStore (in this
  // process only), a PrefixStore over such a store. False for anything anyone who can reach it
  // may have written: a TcpStore without a secret, a FileStore. Never blocks.
  virtual bool members_only() const { return false; }

  void set(const std::string& key, std::string_view value) { set(key, to_bytes(value)); }
  std::string get_string(const std::string& key) { return to_string(get(key)); }

  Millis timeout() const { return timeout_; }
  void set_timeout(Millis t) { timeout_ = t; }

 protected:
  Millis resolve(Millis t) const { return t == kUseGroupTimeout ? timeout_ : t; }

 private:
  Millis timeout_;
};

// kColumn's read: cell `member` of each value (each value `values.size()` equal cells); throws
// InvalidArgument naming the gather when the values are not.
COLLIE_API std::vector<Bytes> column_of(const std::vector<Bytes>& values, int member,
                                        const std::string& name);
// Throws InvalidArgument unless members >= 1, 0 <= member < members and (kColumn) the value is
// `members` equal cells; every gather checks before it sends anything.
COLLIE_API void check_gather_args(const std::string& name, int member, int members,
                                  size_t value_bytes, Store::GatherRead read);

// The error every implementation throws when a wait expires, so messages read the same.
[[noreturn]] COLLIE_API void throw_store_timeout(const std::vector<std::string>& keys,
                                                 Millis waited, std::string_view where);
// The error every implementation throws for a call on an interrupt()ed client.
[[noreturn]] COLLIE_API void throw_store_interrupted(const std::vector<std::string>& keys,
                                                     std::string_view where);

}  // namespace collie
