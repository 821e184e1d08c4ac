#pragma once
// Small builders for real-shaped pod specs, so the check tables read like manifests.
//
//   auto pod = with_volume(gpu_pod(), pvc("ckpt"), "/checkpoints");
//   auto gap = run_check(check_checkpoint_volume, pod);
//
// gpu_pod() carries the two NoExecute tolerations the API server's
// DefaultTolerationSeconds plugin adds before a validating webhook sees a pod.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "policies/checks.h"
#include "policies/classifier.h"
#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kgtest {

using namespace kubegap;

inline constexpr const char* kNotReady = "node.kubernetes.io/not-ready";
inline constexpr const char* kUnreachable = "node.kubernetes.io/unreachable";
inline constexpr const char* kZone = "topology.kubernetes.io/zone";
inline constexpr const char* kOldZone = "failure-domain.beta.kubernetes.io/zone";

inline Toleration toleration(std::string key, std::string op, std::string effect,
                             std::optional<std::int64_t> seconds = std::nullopt, std::string value = "") {
  return Toleration{std::move(key), std::move(op), std::move(value), std::move(effect), seconds};
}

// The tolerations DefaultTolerationSeconds adds: not-ready and unreachable, NoExecute,
// Exists, 300 s.
inline std::vector<Toleration> default_tolerations() {
  return {toleration(kNotReady, "Exists", "NoExecute", 300), toleration(kUnreachable, "Exists", "NoExecute", 300)};
}

// Tuned tolerations: both health taints bounded at `seconds`.
inline std::vector<Toleration> health_tolerations(std::int64_t seconds) {
  return {toleration(kNotReady, "Exists", "NoExecute", seconds),
          toleration(kUnreachable, "Exists", "NoExecute", seconds)};
}

// A one-container pod that requests one nvidia.com/gpu and runs torchrun (training
// evidence), as admitted (defaults applied).
inline PodSpecView gpu_pod() {
  PodSpecView pod;
  pod.containers.push_back({.name = "trainer", .resources = {"cpu", "memory", "nvidia.com/gpu"}, .volume_mounts = {}});
  pod.containers.front().command = {"torchrun", "train.py"};
  pod.tolerations = default_tolerations();
  return pod;
}

// A pod with no accelerator (a web server, or a CPU-only training pod).
inline PodSpecView cpu_pod() {
  PodSpecView pod;
  pod.containers.push_back({.name = "web", .resources = {"cpu", "memory"}, .volume_mounts = {}});
  pod.tolerations = default_tolerations();
  return pod;
}

inline Volume volume(std::string name, std::string source, std::string driver = "") {
  return Volume{std::move(name), std::move(source), std::move(driver)};
}
inline Volume pvc(std::string name) { return volume(std::move(name), "persistentVolumeClaim"); }
inline Volume empty_dir(std::string name) { return volume(std::move(name), "emptyDir"); }
inline Volume csi(std::string name, std::string driver) { return volume(std::move(name), "csi", std::move(driver)); }

// with_volume: declares `v` and mounts it at `path` in the first main container.
inline PodSpecView with_volume(PodSpecView pod, const Volume& v, std::string path) {
  pod.volumes.push_back(v);
  pod.containers.front().volume_mounts.push_back({v.name, std::move(path)});
  return pod;
}

// with_mount: mounts `name` at `path` in the first main container, declaring nothing.
inline PodSpecView with_mount(PodSpecView pod, std::string name, std::string path) {
  pod.containers.front().volume_mounts.push_back({std::move(name), std::move(path)});
  return pod;
}

inline PodSpecView with_tolerations(PodSpecView pod, std::vector<Toleration> tolerations) {
  pod.tolerations = std::move(tolerations);
  return pod;
}

inline PodSpecView with_labels(PodSpecView pod, StringMap labels) {
  pod.labels = std::move(labels);
  return pod;
}

inline PodSpecView with_node_selector(PodSpecView pod, StringMap selector) {
  pod.node_selector = std::move(selector);
  return pod;
}

inline PodSpecView with_terms(PodSpecView pod, std::vector<NodeSelectorTerm> terms) {
  pod.required_node_terms = std::move(terms);
  pod.required_node_affinity = true;
  return pod;
}

inline NodeSelectorTerm term(std::vector<Requirement> expressions) {
  return NodeSelectorTerm{std::move(expressions), {}};
}

inline NodeInfo node(std::string name, StringMap labels) { return NodeInfo{std::move(name), std::move(labels)}; }

inline std::shared_ptr<const ClusterSnapshot> cluster(std::vector<DisruptionBudget> budgets,
                                                      std::vector<NodeInfo> nodes = {}) {
  return std::make_shared<const ClusterSnapshot>(std::move(budgets), std::move(nodes));
}

// object_of: a `group`/`kind` object named `name` in namespace ml holding `pods`.
inline WorkloadView object_of(std::string group, std::string kind, std::string name, std::vector<PodSpecView> pods) {
  WorkloadView object;
  object.api_group = std::move(group);
  object.kind = std::move(kind);
  object.namespace_name = "ml";
  object.name = std::move(name);
  object.pods = std::move(pods);
  return object;
}

inline WorkloadView pod_object(PodSpecView pod, std::string namespace_name = "ml") {
  WorkloadView object;
  object.kind = "Pod";
  object.namespace_name = std::move(namespace_name);
  object.name = "train-0";
  object.pods = {std::move(pod)};
  return object;
}

// run_check: one check on one pod of a Pod object in `namespace_name`, with the default
// policy; `accelerator` is computed as evaluate() does.
template <typename Check>
std::optional<Gap> run_check(Check check, const PodSpecView& pod, const ClusterSnapshot* snapshot = nullptr,
                             const std::string& namespace_name = "ml", const Policy& policy = default_policy(),
                             WorkloadClass workload_class = WorkloadClass::kTraining) {
  const WorkloadView object = pod_object(pod, namespace_name);
  const CheckContext ctx{object,        policy, snapshot, "no cluster view", requests_accelerator(pod, policy),
                         workload_class};
  return check(pod, ctx);
}

// Expect: what a table row expects of one check.
enum class Expect { kPasses, kFires, kNotEvaluated };

// CheckRow: one row of a check's table. `says` are substrings of the warning message
// (of the reason, for kNotEvaluated); `never_says` must not appear in it.
struct CheckRow {
  std::string name;  // the rule, as a test name: PinnedByNodeSelectorFires
  PodSpecView pod;
  Expect expect;
  std::vector<std::string> says = {};
  std::vector<std::string> never_says = {};
  std::shared_ptr<const ClusterSnapshot> snapshot = nullptr;
  std::string namespace_name = "ml";
  WorkloadClass workload_class = WorkloadClass::kTraining;
};

inline void PrintTo(const CheckRow& row, std::ostream* os) { *os << row.name; }

inline std::string row_name(const ::testing::TestParamInfo<CheckRow>& info) { return info.param.name; }

template <typename Check>
void verify_row(const CheckRow& row, Check check) {
  const auto gap =
      run_check(check, row.pod, row.snapshot.get(), row.namespace_name, default_policy(), row.workload_class);
  if (row.expect == Expect::kPasses) {
    ASSERT_FALSE(gap.has_value()) << "unexpected gap: " << gap->message << " | " << gap->reason;
    return;
  }
  ASSERT_TRUE(gap.has_value()) << "expected a gap";
  const bool fires = row.expect == Expect::kFires;
  EXPECT_EQ(gap->outcome, fires ? Outcome::kFinding : Outcome::kNotEvaluated);
  EXPECT_FALSE(gap->reason.empty());
  if (fires) {
    EXPECT_FALSE(gap->message.empty());
    EXPECT_FALSE(gap->remedy.empty()) << "every finding says how to fix it";
  } else {
    EXPECT_TRUE(gap->remedy.empty()) << "nothing to fix: " << gap->remedy;
  }
  // The warning (message), the audit annotation (reason) and the fix together say what,
  // where and what to change.
  const std::string text = fires ? gap->message + " | " + gap->reason + " | fix: " + gap->remedy : gap->reason;
  for (const auto& part : row.says) {
    EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in: " << text;
  }
  for (const auto& part : row.never_says) {
    EXPECT_EQ(text.find(part), std::string::npos) << "unexpected \"" << part << "\" in: " << text;
  }
}

}  // namespace kgtest
