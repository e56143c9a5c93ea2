// --backend is checked against the backend registry (cli/run_flags.h): a backend registered the
// way a new backend's register.cpp registers itself is accepted with no edit to the CLI, and an
// unknown name is refused in one line that names every backend this build knows.
#include "cli/run_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "comm/registry.h"
#include "support/refusal.h"

namespace collie::cli {
namespace {

std::string refusal(const RunFlags& f) {
  return testing::refusal([&] { check_run_flags(f); });
}

TEST(RunFlagsBackend, ARegisteredBackendIsAcceptedUnchanged) {
  BackendRegistration reg;
  reg.name = "zz_new_backend";
  reg.create = [](const BackendArgs&) -> std::shared_ptr<ProcessGroup> { return nullptr; };
  ASSERT_TRUE(register_backend(reg));
  RunFlags f;
  f.backend = "zz_new_backend";
  EXPECT_EQ(refusal(f), "");
  f.backend = "gloo";
  EXPECT_EQ(refusal(f), "");
}

// A backend this build lacks, registered the way src/backends/missing.cpp registers one,
// so the cases below have one whichever backends this machine could build.
void register_test_missing_backend() {
  static const bool once =
      register_missing_backend({"zz_missing_backend", "not built: a test stands in for it"});
  (void)once;
}

TEST(RunFlagsBackend, AMissingBackendPassesTheFlagCheck) {
  // Not built here: the flag check accepts the name, check_before_any_rank then says why.
  register_test_missing_backend();
  const auto missing = missing_backends();
  ASSERT_TRUE(std::any_of(missing.begin(), missing.end(),
                          [](const auto& m) { return m.name == "zz_missing_backend"; }));
  for (const auto& m : missing) {
    RunFlags f;
    f.backend = m.name;
    EXPECT_EQ(refusal(f), "") << m.name;
  }
  EXPECT_EQ(backend_unavailable_reason("zz_missing_backend"),
            "backend 'zz_missing_backend' is not available in this build: not built: a test "
            "stands in for it");
}

TEST(RunFlagsBackend, AnUnknownNameIsOneLineNamingEveryKnownBackend) {
  register_test_missing_backend();
  RunFlags f;
  f.backend = "foo";
  const std::string why = refusal(f);
  ASSERT_EQ(why.rfind("--backend must be ", 0), 0u) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  ASSERT_FALSE(backends().empty());
  for (const auto* b : backends()) EXPECT_NE(why.find(b->name), std::string::npos) << why;
  for (const auto& m : missing_backends()) EXPECT_NE(why.find(m.name), std::string::npos) << why;
  EXPECT_NE(why.find("zz_missing_backend"), std::string::npos) << why;
  EXPECT_EQ(why.find("foo"), std::string::npos) << why;
}

}  // namespace
}  // namespace collie::cli
