#pragma once
// A small Python pickle codec for plain data: what PyTorch's flight recorder writes and its
// analyzer (`fr_trace`) reads. Nothing else of pickle is supported — no classes, no GLOBAL or
// REDUCE — so reading never runs code; an opcode outside the subset is an error.
//
// PickleWriter emits protocol 2 (what torch's own pickler writes): dict, list, tuple, str,
// 64-bit int, float, bool, None. parse_pickle reads what Python's pickle.dumps produces for
// such data with protocols 2 to 5 (memo, frames and bytes included).
// Thread safety: a PickleWriter is used by one thread; parse_pickle is a pure function.
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_budget.h"

namespace collie {

// Streaming writer. Containers are opened and closed in order; inside a dict, values alternate
// key, value. REQUIRES: every begin_* is matched by its end_*, and dicts hold an even number of
// values, before finish(); a misuse throws std::logic_error.
class PickleWriter {
 public:
  PickleWriter();
  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void real(double v);
  void str(std::string_view v);  // REQUIRES: UTF-8 (Python decodes it strictly)
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  void begin_tuple();
  void end_tuple();
  // A JSON value as the same Python value (object -> dict, array -> list, ...).
  void json(const nlohmann::json& v);
  // The pickle (ending in STOP). The writer is spent afterwards.
  std::string finish();

 private:
  void open(char kind);
  void close(char kind);
  std::string out_;
  std::vector<std::pair<char, size_t>> open_;  // container kind, items so far
};

// Hard limits on what a pickle may be: its size and its nesting.
inline constexpr size_t kMaxPickleBytes = size_t{256} << 20;
inline constexpr int kMaxPickleDepth = 32;

// A parsed pickle: its values as Python's unpickler would build them (the memo shares values, so
// a dict memoized while empty and filled afterwards is the filled dict), strings viewing the
// input, which must outlive the document. For readers that take only part of a large pickle
// (torch_dump_reader.cpp) without copying the rest.
// Memory: every value costs 16 bytes, every container item 8, every stack, mark or memo slot 4,
// each charged to `budget` as it is made (InputBudget throws past its limit); None and the
// booleans are shared. Untrusted input: throws InvalidArgument (one line, naming the byte
// offset) on an opcode outside the plain-data subset (nothing is executed), truncation, a
// pickle above kMaxPickleBytes, an int wider than 64 bits, a dict key that is neither str nor
// int. Thread safety: immutable once built.
class PickleDoc {
 public:
  using Ref = uint32_t;
  enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict };

  PickleDoc(std::string_view data, InputBudget& budget);
  PickleDoc(const PickleDoc&) = delete;
  PickleDoc& operator=(const PickleDoc&) = delete;

  Ref root() const { return root_; }
  Kind kind(Ref r) const { return nodes_[r].kind; }
  int64_t integer(Ref r) const { return static_cast<int64_t>(nodes_[r].b); }  // Bool, Int
  double real(Ref r) const;                                                   // Float
  std::string_view str(Ref r) const;                                          // Str, Bytes
  // A list's or tuple's items, or a dict's keys and values alternating, in order.
  template <typename F>
  void for_each(Ref container, F f) const {
    for (uint32_t s = nodes_[container].head(); s != kNoSlot; s = slots_[s].next) f(slots_[s].node);
  }
  // The value of `key` (a str) in `dict`, the last one when the dict sets it twice; charges
  // `steps` one per item looked at.
  std::optional<Ref> get(Ref dict, std::string_view key, InputBudget* steps = nullptr) const;
  // The value as JSON (dict -> object with str keys, int keys as their decimal text; list and
  // tuple -> array; bytes -> binary), charging `budget` what it allocates (16 bytes a value,
  // string bytes, container overheads) and `steps` one per value; nested deeper than
  // kMaxPickleDepth (or containing itself) throws InvalidArgument.
  nlohmann::json to_json(Ref r, InputBudget& budget, InputBudget* steps = nullptr) const;

 private:
  static constexpr uint32_t kNoSlot = 0xffffffffu;
  struct Node {
    Kind kind = Kind::None;
    uint32_t a = 0;  // Str, Bytes: length; containers: first item slot
    uint64_t b = 0;  // Int, Bool, Float: the value's bits; Str, Bytes: offset; containers: last
                     // item slot
    uint32_t head() const { return a; }
  };
  struct Slot {
    uint32_t node;
    uint32_t next;
  };
  friend class PickleParser;
  nlohmann::json to_json(Ref r, InputBudget& budget, InputBudget* steps, int depth) const;
  std::string_view data_;
  std::deque<Node> nodes_;
  std::deque<Slot> slots_;
  Ref root_ = 0;
};

// Parses one pickle into JSON (PickleDoc::to_json of its root) with a budget of 16 bytes of
// memory per input byte: what the tests and tools that want the whole value use.
nlohmann::json parse_pickle(std::string_view data);

}  // namespace collie
