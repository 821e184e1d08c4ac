#pragma once
// evaluate: the engine shared by the webhook and the offline command.
//
//   auto findings = evaluate(object, cluster_snapshot_or_null, policy);
//
// Deterministic: no clock, no randomness, no logging, no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/finding.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

inline constexpr const char* kExemptAnnotation = "kubegap.io/exempt";
inline constexpr const char* kExemptReasonAnnotation = "kubegap.io/exempt-reason";
// kPartsNote: the "check" of the note saying that parts were left out (maxPartsPerObject);
// its audit annotation key.
inline constexpr std::string_view kPartsNote = "parts";
// kInputNote: the "check" of the note carrying WorkloadView::notes (placeholders read as
// set at deploy time, the runtime a TrainJob was resolved with); its audit annotation key.
inline constexpr std::string_view kInputNote = "input";

// PartVerdict: how one pod spec of the object was classified, and by which rule (the
// audit annotation `class` and `check --explain` show it).
struct PartVerdict {
  std::string part;  // "" for a Pod
  bool evaluated = false;
  WorkloadClass workload_class = WorkloadClass::kAuto;
  bool coordinator = false;
  std::string why;
};

struct Evaluation {
  std::vector<Finding> findings;
  std::vector<PartVerdict> parts;  // empty when the namespace is excluded
};

// evaluate_object_view: the findings and how each part was classified.
Evaluation evaluate_object_view(const WorkloadView& object, const ClusterSnapshot* cluster, const Policy& policy,
                                std::string_view cluster_unavailable = "no cluster view",
                                const ClusterSnapshot* claims = nullptr);

// describe_classes: the `class` audit annotation: "training (launcher torchrun)", or per
// part "replica Launcher: diagnostic (...); replica Worker: ..."; empty when no part
// was evaluated.
std::string describe_classes(const std::vector<PartVerdict>& parts);

// evaluate: one Finding per check that has something to say about `object`, in registry
// order. The same gap in several parts of a workload is one Finding listing the parts.
// `cluster` is nullptr without a cluster view; `cluster_unavailable` then says why.
// `claims` resolves DRA resource claims (device classes); by default the cluster view.
std::vector<Finding> evaluate(const WorkloadView& object, const ClusterSnapshot* cluster, const Policy& policy,
                              std::string_view cluster_unavailable = "no cluster view",
                              const ClusterSnapshot* claims = nullptr);

}  // namespace kubegap
