// core/json_input.h: a key given twice is refused wherever it is, named with its JSON pointer;
// nesting is bounded; ordinary JSON (same keys in sibling objects, arrays of objects) reads as
// nlohmann reads it.
#include "core/json_input.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/error.h"

namespace collie {
namespace {

std::string refusal(const std::string& text, int depth = 16) {
  try {
    (void)parse_json_input(text, depth);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(JsonInput, AKeyGivenTwiceIsNamedWithWhereItIs) {
  EXPECT_EQ(refusal(R"({"a": 1, "a": 2})"), "duplicate key 'a' in the object at /");
  EXPECT_EQ(refusal(R"({"x": [0, {"k": {"b": 1, "c": [], "b": {}}}]})"),
            "duplicate key 'b' in the object at /x/1/k");
  EXPECT_EQ(refusal(R"([[], [{"q": 1}, {"q": 1, "q": 1}]])"),
            "duplicate key 'q' in the object at /1/1");
}

TEST(JsonInput, OrdinaryJsonReadsAsNlohmannReadsIt) {
  const std::string text = R"({"a": [{"k": 1}, {"k": 2}], "b": {"k": {"k": null}}, "c": "k"})";
  EXPECT_EQ(parse_json_input(text, 16), nlohmann::json::parse(text));
  std::istringstream in(text);
  EXPECT_EQ(parse_json_input(in, 16), nlohmann::json::parse(text));
}

TEST(JsonInput, NestingIsBounded) {
  EXPECT_EQ(refusal("[[[[1]]]]", 3), "nested deeper than 3 levels");
  EXPECT_EQ(refusal("[[[1]]]", 3), "accepted");
  EXPECT_THROW((void)parse_json_input("{\"a\": ", 8), nlohmann::json::exception);
}

}  // namespace
}  // namespace collie
