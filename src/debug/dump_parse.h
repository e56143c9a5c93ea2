#pragma once
// The steps parse_dump is made of (dump_reader.cpp), shared with the reader of PyTorch's layout
// (torch_dump_reader.cpp) so a dump of either layout gets the same range checks, the same
// printable strings (core/printable.h: nothing from a dump reaches a terminal raw) and the same
// memory accounting. Internal to src/debug.
// Thread safety: pure functions.
#include <cstddef>
#include <nlohmann/json.hpp>

#include "core/input_budget.h"
#include "debug/analyzer.h"

namespace collie {

// The most files collie analyze reads, and the memory it may spend reading one: a collie JSON
// dump is streamed (its entries are converted as they are parsed), a pickle is held whole.
// Reading a dump of N bytes holds at most kDumpMemoryPerByte * N + kDumpMemorySlack bytes of
// what it builds (charged as it is built, InputBudget), plus the pickle itself: so at most
// 17 bytes per byte of a pickle and 16 per byte of a JSON dump, plus 8 MiB.
inline constexpr size_t kMaxJsonDumpBytes = size_t{1} << 30;
inline constexpr size_t kDumpMemoryPerByte = 16;
inline constexpr size_t kDumpMemorySlack = size_t{8} << 20;
// Steps (values visited, dict items looked at) converting a pickle may take per byte of it: a
// real dump takes about one per 3 bytes.
inline constexpr size_t kDumpStepsPerByte = 64;
// One entry's values (sizes, dtypes, fields): a JSON entry is parsed as a tree before it is
// converted, so it is bounded on its own (a real one has about 25).
inline constexpr size_t kMaxDumpEntryValues = 65536;

InputBudget dump_budget(size_t dump_bytes, const std::string& what);

// Everything of a dump but its entries: rank, world_size, reason, times, host, ring, pg_config
// and pg_status; group ranks given as ranges ("0-4095", version 2) are charged to `budget` as
// they expand. Throws InvalidArgument ("invalid flight-recorder dump: ...").
void read_dump_header(const nlohmann::json& top, RankDump* out, InputBudget& budget);
// One entry (`index` names it in errors).
DumpEntry read_dump_entry(const nlohmann::json& e, size_t index);
// Appends `e` to d->entries, charging its memory (and the vector's growth) to `budget`.
void keep_dump_entry(DumpEntry e, RankDump* d, InputBudget& budget);
// After the last entry: every entry's group is in pg_config.
void check_dump_entries(const RankDump& d);

}  // namespace collie
