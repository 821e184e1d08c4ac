#pragma once
// Which pods are evaluated, and as what (DESIGN.md, "Check semantics"; the classes are
// WorkloadClass in policies/policy.h).
//
//   const WorkloadKind* row = judging_row(object, policy);   // the owner's row for a Pod
//   PodClass c = classify_pod(pod, object, row, accelerator, policy);
//   if (c.evaluated && policy.check_applies("zone-spread", c.workload_class)) ...

#include <string>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

inline constexpr const char* kTrainingJobAnnotation = "kubegap.io/training-job";

// container_requests_accelerator: the container requests or limits an accelerator
// resource (policy patterns, or a DRA extended resource of an accelerator device class).
bool container_requests_accelerator(const Container& container, const Policy& policy);

// requests_accelerator: any container or init container requests or limits a resource
// matching the policy's accelerator patterns (or a DRA extended resource of an
// accelerator device class), consumes a DRA claim whose device class is an accelerator
// class (resolved through `cluster` when it knows the claim), or the pod carries a
// fractional-GPU annotation.
bool requests_accelerator(const PodSpecView& pod, const Policy& policy, const std::string& namespace_name = {},
                          const ClusterSnapshot* cluster = nullptr);

// judging_row: the workload-table row whose class and skipped checks apply to `object`.
// For a Pod with a controller owner of a kind in the table (a ReplicaSet, a DaemonSet,
// a PyTorchJob), the owner's row: the pod is judged like what made it. Otherwise the
// object's own row; nullptr when its kind is not in the table.
const WorkloadKind* judging_row(const WorkloadView& object, const Policy& policy);

// PodClass: whether a pod spec is evaluated, its class, and the rule that decided it
// (for the audit annotation and `check --explain`).
struct PodClass {
  bool evaluated = false;
  WorkloadClass workload_class = WorkloadClass::kAuto;
  std::string why;
};

// PartEvidence: what the part's commands (or its job's coordinator and entrypoint) show
// (policies/evidence.h). Empty: nothing either way.
struct PartEvidence {
  std::string training;    // why it trains
  std::string diagnostic;  // why it only runs diagnostics or placeholders
  // Every part of the object only starts cluster nodes that wait for work (sshd, `ray
  // start`) and the object has no entrypoint: a cluster with no workload of its own.
  bool idle_cluster = false;
  std::string serving;  // the inference server a container starts (servingPrograms)
  // Why its commands only read checkpoints (eval.py, run_infer.sh: nonTraining hints).
  std::string reader = {};
  // Another part of the object requests an accelerator: that is where it trains, and a
  // CPU part beside it (a RayJob's head, a driver) is not judged on its own evidence.
  bool accelerator_elsewhere = false;
  // It submits its program to a cluster elsewhere (`ray job submit -- python train.py`):
  // the training runs there, not in this pod.
  bool submits_elsewhere = false;
};

// classify_pod: a pod labelled as training (kubegap.io/training-job: "true" on the pod
// template or the object, or a framework label) is training. Otherwise it takes the
// class of its row; it is evaluated when the row is a training kind or the pod requests
// an accelerator (a CPU web server in a Deployment is nobody's training job), or, on CPU,
// when its row is `auto`, it has no controller owner, nothing beside it requests an
// accelerator and its command visibly trains (policy judgeCpuTraining). A part whose
// commands only run diagnostics or placeholders is `diagnostic`, in any class. An `auto`
// pod with training evidence is training; without, it stays `auto`.
PodClass classify_pod(const PodSpecView& pod, const WorkloadView& object, const WorkloadKind* row, bool accelerator,
                      const Policy& policy, const PartEvidence& evidence = {});

}  // namespace kubegap
