#pragma once
// Which nodes a pod's required selectors admit, as the scheduler decides it
// (k8s.io/component-helpers/scheduling/corev1/nodeaffinity, GetRequiredNodeAffinity(pod)
// .Match(node), Kubernetes v1.36): every nodeSelector label, and when there is required
// node affinity, at least one of its terms (a term: all its matchExpressions on labels and
// matchFields on metadata.name; an empty term admits nothing). The differential oracle in
// tests/oracle holds this to the upstream function.

#include "policies/cluster_view.h"
#include "policies/pod_view.h"

namespace kubegap {

bool pod_admits_node(const PodSpecView& pod, const NodeInfo& node);

}  // namespace kubegap
