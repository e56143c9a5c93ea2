// --backend is checked against the backend registry (cli/run_flags.h): a backend registered the
// way a new backend's register.cpp registers itself is accepted with no edit to the CLI, and an
// unknown name is refused in one line that names every backend this build knows.
#include "cli/run_flags.h"

#include <gtest/gtest.h>

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

TEST(RunFlagsBackend, AMissingBackendPassesTheFlagCheck) {
  // Not built here: the flag check accepts the name, check_before_any_rank then says why.
  for (const auto& m : missing_backends()) {
    RunFlags f;
    f.backend = m.name;
    EXPECT_EQ(refusal(f), "") << m.name;
  }
}

TEST(RunFlagsBackend, AnUnknownNameIsOneLineNamingEveryKnownBackend) {
  RunFlags f;
  f.backend = "foo";
  const std::string why = refusal(f);
  ASSERT_EQ(why.rfind("--backend must be ", 0), 0u) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  ASSERT_FALSE(backends().empty());
  for (const auto* b : backends()) EXPECT_NE(why.find(b->name), std::string::npos) << why;
  for (const auto& m : missing_backends()) EXPECT_NE(why.find(m.name), std::string::npos) << why;
  EXPECT_EQ(why.find("foo"), std::string::npos) << why;
}

}  // namespace
}  // namespace collie::cli
