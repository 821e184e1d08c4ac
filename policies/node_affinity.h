#pragma once
// Which nodes a pod's required selectors admit, as the scheduler decides it
// (k8s.io/component-helpers/scheduling/corev1/nodeaffinity, GetRequiredNodeAffinity(pod)
// .Match(node), Kubernetes v1.36): every nodeSelector label, and when there is required
// node affinity, at least one of its terms (a term: all its matchExpressions on labels and
// matchFields on metadata.name; an empty term admits nothing; a term that does not parse
// admits nothing). The differential oracle in tests/oracle holds this to the upstream
// function, on invalid input too.
//
//   const RequiredNodeAffinity affinity(pod);  // parsed once, as GetRequiredNodeAffinity
//   for (const auto& node : nodes) if (affinity.admits(node)) ...

#include <vector>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"

namespace kubegap {

// RequiredNodeAffinity: a pod's required selectors with its terms parsed once: the terms
// that can admit a node (term_can_admit) are kept, so matching many nodes repeats no
// validation. It refers to `pod`, which must outlive it.
class RequiredNodeAffinity {
 public:
  explicit RequiredNodeAffinity(const PodSpecView& pod);
  bool admits(const NodeInfo& node) const;

 private:
  const PodSpecView& pod_;
  bool required_;  // required affinity is set: only `terms_` can admit
  std::vector<const NodeSelectorTerm*> terms_;
};

// pod_admits_node: RequiredNodeAffinity(pod).admits(node), for one node.
bool pod_admits_node(const PodSpecView& pod, const NodeInfo& node);

// term_can_admit: whether a required term can admit any node at all: it is not empty and
// it parses (every matchExpression one labels.NewRequirement accepts, every matchFields
// requirement In or NotIn with one value). One that cannot is skipped, never an error.
bool term_can_admit(const NodeSelectorTerm& term);

}  // namespace kubegap
