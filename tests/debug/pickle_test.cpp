// The pickle codec (debug/pickle.h): what the writer emits reads back the same; what Python's
// pickle.dumps emits (protocols 4 and 5, memo and frames included) reads as Python would; and
// anything that is not plain data, truncated, self-containing, too deep or a memo bomb is one
// InvalidArgument, never executed, never a crash.
#include "debug/pickle.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "core/error.h"

namespace collie {
namespace {

using nlohmann::json;

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    parse_pickle(bytes);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Pickle, WriterOutputReadsBackTheSameValues) {
  PickleWriter w;
  w.begin_dict();
  w.str("ints");
  w.begin_list();
  for (int64_t v : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536},
                    int64_t{-1}, int64_t{INT32_MIN}, int64_t{INT32_MAX}, int64_t{INT32_MAX} + 1,
                    int64_t{1} << 40, int64_t{-129}, INT64_MIN, INT64_MAX}) {
    w.integer(v);
  }
  w.end_list();
  w.str("pair");
  w.begin_tuple();
  w.str("0");
  w.str("default_pg");
  w.end_tuple();
  w.str("empty");
  w.begin_list();
  w.end_list();
  w.str("none");
  w.none();
  w.str("flags");
  w.begin_list();
  w.boolean(true);
  w.boolean(false);
  w.end_list();
  w.str("ms");
  w.real(-1.25e-3);
  w.str("nested");
  w.json(json::parse(R"({"a": [[4, 4]], "b": {}, "c": "x"})"));
  w.end_dict();
  const std::string bytes = w.finish();
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02"));
  EXPECT_EQ(bytes.back(), '.');
  const json j = parse_pickle(bytes);
  EXPECT_EQ(j["ints"], json::parse("[0, 255, 256, 65535, 65536, -1, -2147483648, 2147483647, "
                                   "2147483648, 1099511627776, -129, -9223372036854775808, "
                                   "9223372036854775807]"));
  EXPECT_EQ(j["pair"], json::array({"0", "default_pg"}));
  EXPECT_EQ(j["empty"], json::array());
  EXPECT_TRUE(j["none"].is_null());
  EXPECT_EQ(j["flags"], json::array({true, false}));
  EXPECT_DOUBLE_EQ(j["ms"].get<double>(), -1.25e-3);
  EXPECT_EQ(j["nested"], json::parse(R"({"a": [[4, 4]], "b": {}, "c": "x"})"));
}

TEST(Pickle, WriterReplacesBytesThatAreNotUtf8) {
  PickleWriter w;
  w.str("ab\xff\xc3\xa9");
  EXPECT_EQ(parse_pickle(w.finish()), json("ab?\xc3\xa9"));
}

TEST(Pickle, WriterMisuseThrows) {
  PickleWriter w;
  w.begin_dict();
  w.str("key");
  EXPECT_THROW(w.end_dict(), std::logic_error);
}

// python3 -c "import pickle; print(pickle.dumps({'a': [1, 2**40, -3, 300, 70000],
//   'b': (1.5, None, True, False), 's': 'x' * 3, 't': (), 'u': ('a',), 'bb': b'hi'},
//   protocol=P).hex())" — SHORT_BINUNICODE, MEMOIZE, BINGET of the memoized 'a', TUPLE1..3,
// LONG1, SHORT_BINBYTES, FRAME.
TEST(Pickle, ReadsWhatPythonWritesWithProtocols4And5) {
  const std::string body =
      "7d94288c0161945d94284b018a060000000000014afdffffff4d2c014a70110100658c01629428473ff80000000"
      "000004e888974948c0173948c03787878948c017494298c017594680185948c026262944302686994752e";
  for (const char* proto : {"04", "05"}) {
    const std::string bytes = unhex(std::string("80") + proto + "955800000000000000" + body);
    const json j = parse_pickle(bytes);
    EXPECT_EQ(j["a"], json::parse("[1, 1099511627776, -3, 300, 70000]"));
    EXPECT_EQ(j["b"], json::parse("[1.5, null, true, false]"));
    EXPECT_EQ(j["s"], "xxx");
    EXPECT_EQ(j["t"], json::array());
    EXPECT_EQ(j["u"], json::array({"a"}));  // BINGET of the key 'a' memoized first
    EXPECT_TRUE(j["bb"].is_binary());
  }
}

TEST(Pickle, MemoSharesContainersFilledAfterTheyWereMemoized) {
  // python3: x = [7]; pickle.dumps([x, x], protocol=4) memoizes x while empty, appends 7 to it,
  // and refers to it again with BINGET: both elements are the filled list.
  EXPECT_EQ(parse_pickle(unhex("8004950c000000000000005d94285d944b07616801652e")),
            json::parse("[[7], [7]]"));
}

TEST(Pickle, RejectsWhatIsNotPlainData) {
  // GLOBAL 'os system' + REDUCE: never resolved, never called.
  const std::string global = unhex("8002") + "cos\nsystem\n" + unhex("58020000006c73") + "\x85R.";
  const std::string e = error_of(global);
  EXPECT_NE(e.find("opcode 0x63 is not plain data"), std::string::npos) << e;
  EXPECT_NE(error_of(unhex("80025d7101") + "R."), "");  // REDUCE
  EXPECT_NE(error_of(unhex("8002") + "\x8f."), "");     // EMPTY_SET
  EXPECT_NE(error_of(unhex("8006") + "N."), "");        // protocol 6
}

TEST(Pickle, RejectsTruncatedAndMalformedInput) {
  EXPECT_NE(error_of(""), "");
  EXPECT_NE(error_of(unhex("8002")), "");                                // no STOP
  EXPECT_NE(error_of(unhex("8002") + "X\xff\xff\xff\x7f" + "ab."), "");  // length past the end
  EXPECT_NE(error_of(unhex("8002") + "."), "");                          // empty stack
  EXPECT_NE(error_of(unhex("8002") + "a."), "");                         // APPEND on nothing
  EXPECT_NE(error_of(unhex("8002") + "}K\x01"
                                     "a."),
            "");                                         // APPEND to a dict
  EXPECT_NE(error_of(unhex("8002") + "h\x05."), "");     // memo never stored
  EXPECT_NE(error_of(unhex("8002") + "u."), "");         // SETITEMS without MARK
  EXPECT_NE(error_of(unhex("8002") + "}(K\x01u."), "");  // key without value
  EXPECT_NE(error_of(unhex("8002") + "\x8a\x09" + std::string(9, '\x01') + "."), "");  // > 64 bit
  EXPECT_NE(error_of(unhex("8002") + "}(]]u."), "");  // list as a dict key
}

TEST(Pickle, RejectsSelfContainingDeepAndExpandingValues) {
  // python3: l = []; l.append(l); pickle.dumps(l, protocol=4)
  EXPECT_NE(error_of(unhex("80049506000000000000005d946800612e")).find("contains itself"),
            std::string::npos);
  // 100 nested lists.
  std::string deep = unhex("8002") + std::string(100, ']') + std::string(99, 'a') + ".";
  EXPECT_NE(error_of(deep).find("deeper than"), std::string::npos);
  // Each level a pair of the previous one, 40 times: 2^40 nodes from ~400 bytes.
  std::string bomb = unhex("8004") + "]\x94";
  for (int i = 0; i < 40; ++i)
    bomb += "(h" + std::string(1, static_cast<char>(i)) + "h" +
            std::string(1, static_cast<char>(i)) + "t\x94";
  bomb += ".";
  const std::string e = error_of(bomb);
  EXPECT_TRUE(e.find("expand") != std::string::npos || e.find("deeper") != std::string::npos) << e;
}

}  // namespace
}  // namespace collie
