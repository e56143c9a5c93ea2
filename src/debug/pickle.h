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
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

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

// Hard limits on what parse_pickle accepts, beyond "bounded by the input's size".
inline constexpr size_t kMaxPickleBytes = size_t{1} << 30;
inline constexpr int kMaxPickleDepth = 32;

// Parses one pickle into JSON: dict -> object (str keys; int keys become their decimal text),
// list and tuple -> array, str -> string, int -> integer, float -> number, bool, None -> null,
// bytes -> binary. Untrusted input: throws InvalidArgument (one line, naming the byte offset) on
// an opcode outside the subset, truncation, nesting deeper than kMaxPickleDepth, a self-
// containing value, an int wider than 64 bits, or memo references that would expand the value
// beyond a few times the input's size. Time and memory grow with the input's size only.
nlohmann::json parse_pickle(std::string_view data);

}  // namespace collie
