#pragma once
// Which pods are training-job pods (DESIGN.md, "Check semantics").

#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

inline constexpr const char* kTrainingJobAnnotation = "kubegap.io/training-job";

// requests_accelerator: any container or init container requests or limits a resource
// matching the policy's accelerator patterns.
bool requests_accelerator(const PodSpecView& pod, const Policy& policy);

// is_training_pod: an accelerator pod, a pod with a training-framework label, a pod of a
// training workload kind, or one annotated kubegap.io/training-job: "true" (on the pod
// template or the object).
bool is_training_pod(const PodSpecView& pod, const WorkloadView& object, const Policy& policy);

}  // namespace kubegap
