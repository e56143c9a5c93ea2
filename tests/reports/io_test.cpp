// JSON / CSV / JSONL carry the same rows; JSON round-trips through the reader.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/error.h"
#include "reports/json_io.h"
#include "reports/row_writers.h"

namespace collie::reports {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("collie_reports_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

ResultRow sample(int i) {
  ResultRow r;
  r.collective = "all_reduce";
  r.placement = i % 2 ? "in" : "out";
  r.size_bytes = 1024 << i;
  r.count = 256 << i;
  r.dtype = "float";
  r.redop = "sum";
  r.time_us = 10.5 + i;
  r.algbw_gbps = 1.25 * i;
  r.busbw_gbps = 2.5 * i;
  r.wrong = i == 2 ? 7 : 0;
  r.wrong_rank = i == 2 ? 1 : -1;
  r.wrong_offset = i == 2 ? 42 : -1;
  r.rank_time_us = {10.0 + i, 11.0 + i};
  r.slowest_rank = 1;
  r.iter = compute_iter_stats({1, 2, 3, 4, 100});
  r.iters = 5;
  return r;
}

TEST(ReportsIo, JsonRoundTripsAndAgreesWithCsvAndJsonl) {
  RunResult run;
  run.meta.version = "0.1.0";
  run.meta.backend = "gloo";
  run.meta.world_size = 2;
  run.meta.hosts = {"a", "b"};
  run.meta.flags = {{"-b", "8"}};
  run.meta.started_at = "2026-01-01T00:00:00Z";
  const std::string json = temp_path("r.json"), csv = temp_path("r.csv"),
                    jsonl = temp_path("r.jsonl");
  {
    CsvWriter c(csv);
    JsonlWriter l(jsonl);
    for (int i = 0; i < 3; ++i) {
      run.rows.push_back(sample(i));
      c.write(run.rows.back());
      l.write(run.rows.back());
      write_results_atomic(json, run);  // an interrupted run keeps the finished rows
      EXPECT_EQ(read_results(json).rows.size(), static_cast<size_t>(i + 1));
    }
  }
  run.summary = summarize(run.rows, 2);
  write_results_atomic(json, run);
  const RunResult back = read_results(json);
  ASSERT_EQ(back.rows.size(), 3u);
  ASSERT_TRUE(back.summary.has_value());
  EXPECT_EQ(back.summary->wrong_total, 7);
  EXPECT_EQ(back.meta.hosts, run.meta.hosts);
  EXPECT_EQ(back.rows[2].wrong_rank, 1);
  EXPECT_EQ(back.rows[2].wrong_offset, 42);
  EXPECT_DOUBLE_EQ(back.rows[1].iter.max_us, 100);
  EXPECT_EQ(back.rows[0].rank_time_us, run.rows[0].rank_time_us);

  std::ifstream lin(jsonl);
  std::string line;
  int n = 0;
  while (std::getline(lin, line)) {
    const ResultRow r = row_from_json(nlohmann::json::parse(line));
    EXPECT_EQ(r.size_bytes, back.rows[n].size_bytes);
    EXPECT_DOUBLE_EQ(r.busbw_gbps, back.rows[n].busbw_gbps);
    ++n;
  }
  EXPECT_EQ(n, 3);

  std::ifstream cin(csv);
  std::getline(cin, line);
  EXPECT_EQ(line + "\n", CsvWriter::header());
  const size_t columns = std::count(line.begin(), line.end(), ',');
  n = 0;
  while (std::getline(cin, line)) {
    EXPECT_EQ(static_cast<size_t>(std::count(line.begin(), line.end(), ',')), columns);
    EXPECT_EQ(line.substr(0, line.find(',', line.find(',') + 1)),
              "all_reduce," + back.rows[n].placement);
    EXPECT_NE(line.find("," + std::to_string(back.rows[n].size_bytes) + ","), std::string::npos);
    ++n;
  }
  EXPECT_EQ(n, 3);
  // No temporary of the JSON writer's atomic rewrites is left (".<name>.<tag>.tmp" beside it).
  const std::filesystem::path jp(json);
  const std::string tmp_prefix = "." + jp.filename().string() + ".";
  for (const auto& e : std::filesystem::directory_iterator(jp.parent_path())) {
    const std::string n = e.path().filename().string();
    EXPECT_FALSE(n.starts_with(tmp_prefix) && n.ends_with(".tmp")) << "left behind: " << n;
  }
  std::filesystem::remove(json);
  std::filesystem::remove(csv);
  std::filesystem::remove(jsonl);
}

TEST(ReportsIo, ReaderRejectsOtherSchemasAndGarbage) {
  const std::string p = temp_path("bad.json");
  std::ofstream(p) << R"({"schema": "something.else", "run": {}, "rows": []})";
  EXPECT_THROW(read_results(p), InvalidArgument);
  std::ofstream(p) << "not json";
  EXPECT_THROW(read_results(p), InvalidArgument);
  EXPECT_THROW(read_results(p + ".missing"), InvalidArgument);
  std::filesystem::remove(p);
}

TEST(ReportsIo, IterStatsP50IsTheMedianOtherPercentilesNearestRank) {
  std::vector<double> t;
  for (int i = 1; i <= 100; ++i) t.push_back(i);
  const IterStats s = compute_iter_stats(t);
  EXPECT_EQ(s.samples, 100);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.p50_us, 50.5);  // the midpoint (was t[n/2] = 51, unlike every other median)
  EXPECT_DOUBLE_EQ(s.p95_us, 95);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.max_us, 100);
  EXPECT_GT(s.cv, 0.5);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// --csv / --jsonl name files that runs append to: a second writer keeps the first one's rows, and
// a CSV gets its header once.
TEST(ReportsIo, RowWritersAppendAndACsvGetsOneHeader) {
  const std::string csv = temp_path("append.csv"), jsonl = temp_path("append.jsonl");
  std::filesystem::remove(csv);
  std::filesystem::remove(jsonl);
  for (int run = 0; run < 2; ++run) {
    check_row_file(csv, "--csv", true);
    check_row_file(jsonl, "--jsonl", false);
    CsvWriter c(csv);
    JsonlWriter l(jsonl);
    for (int i = 0; i < 2; ++i) {
      c.write(sample(run * 2 + i));
      l.write(sample(run * 2 + i));
    }
  }
  const auto rows = lines_of(csv);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0] + "\n", CsvWriter::header());
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(rows[i + 1] + "\n", CsvWriter::row(sample(i))) << "row " << i;
  const auto objects = lines_of(jsonl);
  ASSERT_EQ(objects.size(), 4u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(nlohmann::json::parse(objects[i]).at("size_bytes"), sample(i).size_bytes)
        << objects[i];
  std::filesystem::remove(csv);
  std::filesystem::remove(jsonl);
}

// What appending must not do: mix another CSV's columns with collie's, or follow a symlink or
// open a FIFO planted in a shared results folder. The pre-run check and the writer agree.
TEST(ReportsIo, RowWritersRefuseAForeignCsvASymlinkAndAFifo) {
  const std::string foreign = temp_path("foreign.csv");
  { std::ofstream(foreign) << "time,value\n1,2\n"; }
  EXPECT_THROW(check_row_file(foreign, "--csv", true), InvalidArgument);
  EXPECT_THROW(CsvWriter{foreign}, Error);
  EXPECT_NO_THROW(check_row_file(foreign, "--jsonl", false));  // JSONL has no header to match
  EXPECT_EQ(lines_of(foreign), (std::vector<std::string>{"time,value", "1,2"}));

  const std::string target = temp_path("target.csv"), link = temp_path("link.csv");
  std::filesystem::remove(target);
  std::filesystem::remove(link);
  std::filesystem::create_symlink(target, link);
  EXPECT_THROW(check_row_file(link, "--csv", true), InvalidArgument);
  EXPECT_THROW(CsvWriter{link}, Error);
  EXPECT_THROW(JsonlWriter{link}, Error);
  EXPECT_FALSE(std::filesystem::exists(target));

  const std::string fifo = temp_path("fifo.csv");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(check_row_file(fifo, "--csv", true), InvalidArgument);
  EXPECT_THROW(JsonlWriter{fifo}, Error);  // returns at once: the open does not wait for a reader
  for (const auto& p : {foreign, link, fifo}) std::filesystem::remove(p);
}

// Two runs starting on one new CSV file (issue 40): each found it empty, then each wrote the
// header. The writer decides under an exclusive flock: one that finds the file locked by another
// writer waits, and then sees that writer's header instead of adding its own.
TEST(ReportsIo, TwoCsvWritersOnANewFileWriteOneHeader) {
  const std::string csv = temp_path("race.csv");
  std::filesystem::remove(csv);
  const int other = ::open(csv.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  ASSERT_GE(other, 0);
  ASSERT_EQ(::flock(other, LOCK_EX), 0);  // the other writer, deciding
  std::thread second([&] {
    CsvWriter c(csv);
    c.write(sample(1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string header = CsvWriter::header();
  ASSERT_EQ(::write(other, header.data(), header.size()), static_cast<ssize_t>(header.size()));
  ASSERT_EQ(::flock(other, LOCK_UN), 0);
  second.join();
  ::close(other);
  const auto rows = lines_of(csv);
  ASSERT_EQ(rows.size(), 2u) << csv;
  EXPECT_EQ(rows[0] + "\n", header);
  EXPECT_EQ(rows[1] + "\n", CsvWriter::row(sample(1)));

  // And many writers at once on new files: one header each time.
  for (int round = 0; round < 20; ++round) {
    std::filesystem::remove(csv);
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w) writers.emplace_back([&, w] { CsvWriter(csv).write(sample(w)); });
    for (auto& t : writers) t.join();
    const auto lines = lines_of(csv);
    ASSERT_EQ(lines.size(), 5u) << "round " << round;
    EXPECT_EQ(std::count(lines.begin(), lines.end(), rows[0]), 1) << "round " << round;
  }
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace collie::reports
