// The loader of libcudart and libnccl (src/backends/nccl/dynload.h): where it looks, and on a
// host with the toolkit (every machine that builds this test) that the CUDA and NCCL functions
// collie calls reach the real libraries. The host without them is tests/bundle (a Debian root
// with neither: collie starts, and --backend nccl says which library is missing, in one line).
#include "backends/nccl/dynload.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>
#include <vector>

namespace collie::dynload {
namespace {

using Dirs = std::vector<std::string>;

TEST(Dynload, LooksInNcclHomeThenCudaHomeThenTheDefaultToolkitThenTheBuildsFolder) {
  EXPECT_EQ(
      fallback_dirs(Library::Nccl, "/opt/nccl", "/opt/cuda", "/b"),
      (Dirs{"/opt/nccl/lib", "/opt/cuda/lib64", "/opt/cuda/lib", "/usr/local/cuda/lib64", "/b"}));
  // NCCL_HOME is NCCL's alone; unset variables and repeats add nothing.
  EXPECT_EQ(fallback_dirs(Library::CudaRuntime, "/opt/nccl", "", "/usr/local/cuda/lib64"),
            (Dirs{"/usr/local/cuda/lib64"}));
  EXPECT_EQ(fallback_dirs(Library::Nccl, "", "/usr/local/cuda", ""),
            (Dirs{"/usr/local/cuda/lib64", "/usr/local/cuda/lib"}));
}

TEST(Dynload, SonamesAreTheMajorVersionsBuiltAgainst) {
  EXPECT_EQ(soname(Library::CudaRuntime), "libcudart.so." + std::to_string(CUDART_VERSION / 1000));
  EXPECT_EQ(soname(Library::Nccl), "libnccl.so." + std::to_string(NCCL_MAJOR));
}

// The build found both libraries, so this host has them (at worst in the build's folder).
TEST(Dynload, LoadsBothLibrariesTheBuildFound) {
  for (Library lib : {Library::CudaRuntime, Library::Nccl}) {
    EXPECT_NE(handle(lib), nullptr) << missing_line(lib);
    EXPECT_EQ(missing_line(lib), "");
    const std::string path = loaded_path(lib);
    EXPECT_NE(path.find(soname(lib)), std::string::npos) << path;
  }
}

TEST(Dynload, CallsReachTheLoadedLibraries) {
  int runtime = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(runtime / 1000, CUDART_VERSION / 1000);
  int nccl = 0;
  ASSERT_EQ(ncclGetVersion(&nccl), ncclSuccess);
  EXPECT_EQ(nccl / 10000, NCCL_MAJOR);
  // Error strings come from the library itself, not the loader's "could not be loaded" line.
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  const std::string nccl_text = ncclGetErrorString(ncclInvalidArgument);
  EXPECT_NE(nccl_text.find("invalid argument"), std::string::npos) << nccl_text;
}

}  // namespace
}  // namespace collie::dynload
