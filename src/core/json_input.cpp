#include "core/json_input.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/printable.h"

namespace collie {

using nlohmann::json;

std::string JsonShapeCheck::path() const {
  std::string p;
  for (size_t i = 1; i < open_.size(); ++i) p += "/" + open_[i].name;
  if (p.empty()) return "/";
  return p.size() <= kQuoteChars ? p : quote(p);  // keys are input too: a long one is cut
}

void JsonShapeCheck::on_event(int depth, json::parse_event_t event, const json& parsed) {
  switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start: {
      if (depth >= max_depth_) {
        throw InvalidArgument(fmt::format("nested deeper than {} levels", max_depth_));
      }
      std::string name;
      if (!open_.empty()) {
        Open& parent = open_.back();
        name = parent.object ? pending_key_ : std::to_string(parent.next_index++);
      }
      open_.push_back(Open{event == json::parse_event_t::object_start, std::move(name), 0, {}});
      return;
    }
    case json::parse_event_t::key: {
      if (open_.empty()) return;
      pending_key_ = parsed.get<std::string>();
      if (!open_.back().keys.insert(pending_key_).second) {
        throw InvalidArgument(
            fmt::format("duplicate key {} in the object at {}", quote(pending_key_), path()));
      }
      return;
    }
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      if (!open_.empty()) open_.pop_back();
      return;
    case json::parse_event_t::value:
      if (!open_.empty() && !open_.back().object) ++open_.back().next_index;
      return;
  }
}

namespace {

template <typename Input>
json parse_checked(Input&& in, int max_depth) {
  JsonShapeCheck check(max_depth);
  return json::parse(std::forward<Input>(in),
                     [&](int depth, json::parse_event_t event, json& parsed) {
                       check.on_event(depth, event, parsed);
                       return true;
                     });
}

}  // namespace

json parse_json_input(std::string_view text, int max_depth) {
  return parse_checked(text, max_depth);
}

json parse_json_input(std::istream& in, int max_depth) { return parse_checked(in, max_depth); }

}  // namespace collie
