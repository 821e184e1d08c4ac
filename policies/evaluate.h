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

// evaluate: one Finding per check that has something to say about `object`, in registry
// order. The same gap in several parts of a workload is one Finding listing the parts.
// `cluster` is nullptr without a cluster view; `cluster_unavailable` then says why.
// `claims` resolves DRA resource claims (device classes); by default the cluster view.
std::vector<Finding> evaluate(const WorkloadView& object, const ClusterSnapshot* cluster,
                              const Policy& policy,
                              std::string_view cluster_unavailable = "no cluster view",
                              const ClusterSnapshot* claims = nullptr);

}  // namespace kubegap
