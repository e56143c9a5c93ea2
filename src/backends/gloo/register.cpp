// Registers the "gloo" backend (static registrar; libcollie keeps every module's objects).
#include <fmt/format.h>
#include <gloo/config.h>

#include "backends/gloo/process_group_gloo.h"
#include "comm/registry.h"
#include "core/env.h"

namespace collie {
namespace {

const bool kRegistered = register_backend(BackendRegistration{
    "gloo",
    [](const BackendArgs& args) -> std::shared_ptr<ProcessGroup> {
      return std::make_shared<ProcessGroupGloo>(args.info, args.env ? *args.env : Env::process());
    },
    ProcessGroupGloo::declared_capabilities(), "gloo 0.0~git20220518 (tcp transport)", nullptr,
    nullptr});

}  // namespace
}  // namespace collie
