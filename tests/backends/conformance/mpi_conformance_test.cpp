// The conformance suite (conformance.h) over the mpi backend: the world group of MPI_COMM_WORLD,
// run by mpirun with 2, 3 and 4 ranks (CMakeLists.txt); main() is mpi/mpi_test_main.cpp.
#include <gtest/gtest.h>

#include "backends/conformance/conformance.h"
#include "backends/mpi/mpi_test_data.h"

namespace collie::testing::conformance {
namespace {

class MpiConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(MpiConformance, Case) {
  const Outcome o = cases()[GetParam()].run(collie::test::world(), Settings{});
  EXPECT_TRUE(o.ok()) << o.summary();
}

INSTANTIATE_TEST_SUITE_P(World, MpiConformance, ::testing::Range(size_t{0}, cases().size()),
                         [](const auto& info) { return cases()[info.param].name; });

}  // namespace
}  // namespace collie::testing::conformance
