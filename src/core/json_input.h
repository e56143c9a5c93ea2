#pragma once
// JSON that people and other programs wrote (accept specs, result and baseline files,
// flight-recorder dumps) read strictly: nesting is bounded, and an object naming one key twice is
// refused. JSON leaves duplicate keys open and readers differ (nlohmann keeps the last, others
// the first), so a file with two "checks" could pass one tool's review and gate with the other
// reading. The check plugs into nlohmann's parser callback, so a reader that also converts
// values as they are parsed (the dump reader) keeps doing so.
// Thread safety: a JsonShapeCheck serves one parse; parse_json_input is reentrant.
#include <cstddef>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace collie {

class JsonShapeCheck {
 public:
  explicit JsonShapeCheck(int max_depth) : max_depth_(max_depth) {}
  // Call with every parser callback's arguments before acting on them. Throws InvalidArgument,
  // one line: "duplicate key 'k' in the object at /a/0" or "nested deeper than N levels".
  void on_event(int depth, nlohmann::json::parse_event_t event, const nlohmann::json& parsed);

 private:
  struct Open {
    bool object = false;
    std::string name;  // how its parent reaches it: a key, or an array index
    size_t next_index = 0;
    std::unordered_set<std::string> keys;
  };
  std::string path() const;  // JSON pointer of the innermost open container
  int max_depth_;
  std::vector<Open> open_;
  std::string pending_key_;
};

// Parses text or a stream with the check above. Throws InvalidArgument (the check) or
// nlohmann::json::exception (malformed JSON, a number out of range) for the caller to name.
nlohmann::json parse_json_input(std::string_view text, int max_depth);
nlohmann::json parse_json_input(std::istream& in, int max_depth);

}  // namespace collie
