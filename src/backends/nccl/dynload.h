#pragma once
// The CUDA runtime (libcudart.so.<major>) and NCCL (libnccl.so.<major>) are loaded with dlopen at
// first use instead of being linked, so collie starts, and every other backend runs, on a host
// that has neither (a relocatable bundle on a CPU cluster, scripts/bundle.sh). The functions the
// backend calls (cudaMalloc, ncclAllReduce, ...) are defined in dynload_symbols.cpp and forward to
// the loaded library; with the library missing they return an error code (cudaErrorSharedObject-
// InitFailed, ncclSystemError) and the error-string functions return missing_line().
// Search order for each library: the loader's own (LD_LIBRARY_PATH, the executable's RUNPATH,
// ld.so.cache, /lib, /usr/lib), then $NCCL_HOME/lib (NCCL only), $CUDA_HOME/lib64,
// $CUDA_HOME/lib, /usr/local/cuda/lib64 and the folder the build found it in.
// Thread safety: every function is thread-safe; each library is looked for once per process.
#include <string>
#include <vector>

namespace collie::dynload {

enum class Library { CudaRuntime, Nccl };

// "libcudart.so.13", "libnccl.so.2": the sonames of the versions collie was built against.
std::string soname(Library lib);

// The dlopen handle, or nullptr when the library could not be loaded. The first call loads it.
void* handle(Library lib);

// The address of `name` in the library, or nullptr (library or symbol missing).
void* symbol(Library lib, const char* name);

// Empty once the library is loaded; else one line naming the soname, why it failed and where
// collie looked, and how to point collie at it (LD_LIBRARY_PATH).
std::string missing_line(Library lib);

// The file the library was loaded from ("/usr/local/cuda/lib64/libcudart.so.13"), or empty.
std::string loaded_path(Library lib);

// Pure, for tests: the folders tried after the loader's own search, in order, given the values
// of NCCL_HOME and CUDA_HOME (empty = unset) and the folder the build found the library in.
std::vector<std::string> fallback_dirs(Library lib, const std::string& nccl_home,
                                       const std::string& cuda_home, const std::string& build_dir);

}  // namespace collie::dynload
