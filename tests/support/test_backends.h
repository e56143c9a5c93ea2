#pragma once
// The test-only backends, registered in the backend registry (comm/registry.h) of every test that
// links collie_test_support's run_ranks, so the shared harness runs on them like on Gloo:
//   "threads"  ThreadGroup (thread_group.h): a reference backend whose ranks are threads of one
//              process; every collective is computed for real. In-process only.
//   "fake"     FakeBackend (fake_backend.h): every op completes at once without moving data, for
//              tests of wrappers and of layers that use only the group's store.
// Both register during static initialization, as the real backends do.
#include <string>

namespace collie::testing {

// True once both are registered; run_ranks calls it, which also links them into the test.
bool test_backends_registered();

// True for a backend whose ranks must be threads of one process ("threads").
bool in_process_only(const std::string& backend);

}  // namespace collie::testing
