/*!
 * \file axis.cc
 * \brief The axis registry: built-in thread and memory axes, user registration, lookup by name.
 */
#include "tirx_layout/axis.h"

#include <cctype>
#include <mutex>
#include <unordered_map>

#include "tirx_layout/error.h"

namespace tirx_layout {

namespace {

constexpr const char* kLevelNames[] = {"kernel", "cluster", "cta", "warpgroup", "warp", "thread"};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, Axis> by_name;
  std::vector<std::string> order;
};

Axis MakeAxis(const std::string& name, const std::string& kind, std::optional<ExecLevel> scope,
              std::optional<ExecLevel> subscope);

Registry& GlobalRegistry() {
  // Built once; the built-in table follows SPEC §1 (scope, subscope) = (level indexed within, level of a step).
  static Registry* registry = [] {
    auto* r = new Registry();
    struct Builtin {
      const char* name;
      std::optional<ExecLevel> scope, subscope;
    };
    const Builtin thread_axes[] = {
        {"bx", ExecLevel::kKernel, ExecLevel::kCta},          {"by", ExecLevel::kKernel, ExecLevel::kCta},
        {"bz", ExecLevel::kKernel, ExecLevel::kCta},          {"cbx", ExecLevel::kCluster, ExecLevel::kCta},
        {"cby", ExecLevel::kCluster, ExecLevel::kCta},        {"cbz", ExecLevel::kCluster, ExecLevel::kCta},
        {"tx", ExecLevel::kCta, ExecLevel::kThread},          {"warpid", ExecLevel::kCta, ExecLevel::kWarp},
        {"laneid", ExecLevel::kWarp, ExecLevel::kThread},     {"wgid", ExecLevel::kCta, ExecLevel::kWarpgroup},
        {"tid_in_wg", ExecLevel::kWarpgroup, ExecLevel::kThread},
        {"wid_in_wg", ExecLevel::kWarpgroup, ExecLevel::kWarp},
    };
    for (const auto& b : thread_axes) {
      r->by_name.emplace(b.name, MakeAxis(b.name, "thread", b.scope, b.subscope));
      r->order.push_back(b.name);
    }
    for (const char* name : {"m", "TLane", "TCol", "P", "F", "Bank"}) {
      r->by_name.emplace(name, MakeAxis(name, "memory", std::nullopt, std::nullopt));
      r->order.push_back(name);
    }
    return r;
  }();
  return *registry;
}

std::string JoinedNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace

const char* ExecLevelName(ExecLevel level) { return kLevelNames[static_cast<int>(level)]; }

ExecLevel ParseExecLevel(const std::string& name) {
  for (int i = 0; i < 6; ++i) {
    if (name == kLevelNames[i]) return static_cast<ExecLevel>(i);
  }
  FailValue("unknown execution level '", name, "'; expected one of kernel, cluster, cta, warpgroup, warp, thread");
}

namespace {

Axis MakeAxis(const std::string& name, const std::string& kind, std::optional<ExecLevel> scope,
              std::optional<ExecLevel> subscope) {
  auto node = ffi::make_object<AxisObj>();
  node->name = name;
  node->kind = kind;
  if (scope) {
    node->scope = ffi::String(ExecLevelName(*scope));
    node->scope_level = *scope;
  }
  if (subscope) {
    node->subscope = ffi::String(ExecLevelName(*subscope));
    node->subscope_level = *subscope;
  }
  return Axis(std::move(node));
}

}  // namespace

Axis Axis::Get(const std::string& name) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  if (it == r.by_name.end()) {
    FailKey("unknown axis '", name, "'; known axes: ", JoinedNames(r.order),
            " (register new ones with Axis.register)");
  }
  return it->second;
}

Axis Axis::Register(const std::string& name, const std::string& kind, std::optional<std::string> scope,
                    std::optional<std::string> subscope) {
  if (name.empty()) FailValue("an axis name must not be empty");
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      FailValue("axis name '", name, "' must be an identifier (letters, digits, '_')");
    }
  }
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    FailValue("axis name '", name, "' must not start with a digit");
  }
  std::optional<ExecLevel> scope_level, subscope_level;
  if (kind == "thread") {
    if (!scope || !subscope) {
      FailValue("thread axis '", name, "' needs both scope and subscope (e.g. scope='warp', subscope='thread')");
    }
    scope_level = ParseExecLevel(*scope);
    subscope_level = ParseExecLevel(*subscope);
    if (static_cast<int>(*scope_level) >= static_cast<int>(*subscope_level)) {
      FailValue("thread axis '", name, "': scope '", *scope, "' must be an outer level of subscope '", *subscope,
                "'");
    }
  } else if (kind == "memory") {
    if (scope || subscope) FailValue("memory axis '", name, "' takes no scope or subscope");
  } else {
    FailValue("axis kind must be 'thread' or 'memory', got '", kind, "'");
  }

  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  if (it != r.by_name.end()) {
    const AxisObj* existing = it->second.get();
    bool same = existing->kind == kind &&
                existing->scope.value_or(ffi::String("")) == ffi::String(scope.value_or("")) &&
                existing->subscope.value_or(ffi::String("")) == ffi::String(subscope.value_or(""));
    if (!same) {
      FailValue("axis '", name, "' is already registered as a ", std::string(existing->kind), " axis",
                existing->scope ? Concat(" (scope ", std::string(*existing->scope), ", subscope ",
                                         std::string(*existing->subscope), ")")
                                : std::string());
    }
    return it->second;
  }
  Axis axis = MakeAxis(name, kind, scope_level, subscope_level);
  r.by_name.emplace(name, axis);
  r.order.push_back(name);
  return axis;
}

std::vector<std::string> Axis::KnownNames() {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.order;
}

}  // namespace tirx_layout
