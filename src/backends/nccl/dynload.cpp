#include "backends/nccl/dynload.h"

#include <cuda_runtime_api.h>  // CUDART_VERSION
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <nccl.h>  // NCCL_MAJOR

#include <algorithm>
#include <mutex>

#include "core/env.h"

#ifndef COLLIE_CUDART_BUILD_DIR
#define COLLIE_CUDART_BUILD_DIR ""
#endif
#ifndef COLLIE_NCCL_BUILD_DIR
#define COLLIE_NCCL_BUILD_DIR ""
#endif

namespace collie::dynload {
namespace {

constexpr int kCudaMajor = CUDART_VERSION / 1000;

struct Loaded {
  void* handle = nullptr;
  std::string path;
  std::string missing;
};

// What to do when the library is not found, by library.
std::string hint(Library lib) {
  if (lib == Library::Nccl) {
    return fmt::format(
        " (pip's nvidia-nccl-cu{0}: the lib folder under `python3 -c 'import nvidia.nccl; "
        "print(nvidia.nccl.__path__[0])'`), or set NCCL_HOME; --backend gloo needs neither",
        kCudaMajor);
  }
  return fmt::format(
      " (the CUDA {} toolkit's lib64), or set CUDA_HOME; --backend gloo needs neither", kCudaMajor);
}

Loaded load(Library lib) {
  const std::string so = soname(lib);
  const Env& env = Env::process();
  const std::vector<std::string> dirs =
      fallback_dirs(lib, env.get("NCCL_HOME").value_or(""), env.get("CUDA_HOME").value_or(""),
                    lib == Library::Nccl ? COLLIE_NCCL_BUILD_DIR : COLLIE_CUDART_BUILD_DIR);
  std::string error;  // the first failure other than "not there" (a broken or foreign file)
  auto open = [&](const std::string& path) -> void* {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char* e = dlerror();
    const std::string why = e ? e : "";
    if (error.empty() && why.find("No such file") == std::string::npos) error = why;
    return nullptr;
  };
  Loaded l;
  l.handle = open(so);  // the loader's own search
  for (size_t i = 0; !l.handle && i < dirs.size(); ++i) l.handle = open(dirs[i] + "/" + so);
  if (l.handle) {
    link_map* m = nullptr;
    if (dlinfo(l.handle, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name) l.path = m->l_name;
    return l;
  }
  std::string where;
  for (const auto& d : dirs) where += ", " + d;
  l.missing = fmt::format(
      "{} could not be loaded: {}; collie looked in LD_LIBRARY_PATH, the system library path{}; "
      "add the folder that holds it to LD_LIBRARY_PATH{}",
      so, error.empty() ? "not found" : error, where, hint(lib));
  return l;
}

const Loaded& loaded(Library lib) {
  static std::once_flag once[2];
  static Loaded libs[2];
  const int i = lib == Library::Nccl ? 1 : 0;
  std::call_once(once[i], [&] { libs[i] = load(lib); });
  return libs[i];
}

}  // namespace

std::string soname(Library lib) {
  return lib == Library::Nccl ? fmt::format("libnccl.so.{}", NCCL_MAJOR)
                              : fmt::format("libcudart.so.{}", kCudaMajor);
}

void* handle(Library lib) { return loaded(lib).handle; }

void* symbol(Library lib, const char* name) {
  void* h = handle(lib);
  return h ? dlsym(h, name) : nullptr;
}

std::string missing_line(Library lib) { return loaded(lib).missing; }

std::string loaded_path(Library lib) { return loaded(lib).path; }

std::vector<std::string> fallback_dirs(Library lib, const std::string& nccl_home,
                                       const std::string& cuda_home, const std::string& build_dir) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (lib == Library::Nccl && !nccl_home.empty()) add(nccl_home + "/lib");
  if (!cuda_home.empty()) {
    add(cuda_home + "/lib64");
    add(cuda_home + "/lib");
  }
  add("/usr/local/cuda/lib64");
  add(build_dir);
  return dirs;
}

}  // namespace collie::dynload
