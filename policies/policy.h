#pragma once
// Policy: every list the checks consult, with the compiled-in defaults of DESIGN.md.
// A policy file (webhook/policy_loader) overrides any of them.

#include <cstdint>
#include <string>
#include <vector>

namespace kubegap {

struct Policy {
  // Check ids that run. A disabled check produces nothing, not even an annotation.
  std::vector<std::string> enabled_checks;
  // Extended resource names that make a pod an accelerator pod; `*` matches any run of
  // characters ("nvidia.com/mig-*").
  std::vector<std::string> accelerator_resources;
  // A pod carrying any of these label keys belongs to a training framework.
  std::vector<std::string> framework_labels;
  // Inline CSI drivers whose volumes outlive the pod.
  std::vector<std::string> durable_csi_drivers;
  // Taint keys that GPU health agents put on nodes with a failed GPU.
  std::vector<std::string> gpu_fault_taints;
  // A not-ready/unreachable NoExecute toleration must be strictly below this many
  // seconds. 300 is the API server's DefaultTolerationSeconds, which every pod without
  // its own toleration gets, so the default flags exactly the pods nobody tuned.
  std::int64_t health_toleration_seconds_bound = 300;
  // Objects in these namespaces are not evaluated.
  std::vector<std::string> excluded_namespaces;
  // Substrings of a mount path that suggest it holds checkpoints.
  std::vector<std::string> checkpoint_path_hints;

  bool check_enabled(const std::string& check_id) const;
  bool namespace_excluded(const std::string& namespace_name) const;
};

// default_policy: the compiled-in defaults (policies/default-policy.yaml documents them).
const Policy& default_policy();

// wildcard_match: `pattern` with `*` matching any (possibly empty) run of characters.
bool wildcard_match(const std::string& pattern, const std::string& text);

}  // namespace kubegap
