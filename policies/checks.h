#pragma once
// The checks and the one table that registers them.
//
// Each check is a pure function of one pod spec and its context; it returns the gap it
// found (message and short reason) or nothing. evaluate() (policies/evaluate.h) handles
// classification, exemptions and merging across the parts of a workload.

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/finding.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

inline constexpr std::string_view kCheckpointVolume = "checkpoint-volume";
// kNoDurableVolumeReason: checkpoint-volume's reason when no mount path looks like
// checkpoints and the training containers mount no writable durable volume.
inline constexpr std::string_view kNoDurableVolumeReason =
    "no writable durable volume mounted by the training containers";
inline constexpr std::string_view kDisruptionBudget = "disruption-budget";
inline constexpr std::string_view kZoneSpread = "zone-spread";
inline constexpr std::string_view kGpuHealthTolerations = "gpu-health-tolerations";
inline constexpr std::string_view kRestartOnFailure = "restart-on-failure";

// CheckContext: everything a check may consult besides the pod spec itself.
struct CheckContext {
  const WorkloadView& object;
  const Policy& policy;
  // nullptr when there is no cluster view; checks that need one say "not evaluated".
  const ClusterSnapshot* cluster = nullptr;
  // Why `cluster` is nullptr, for the "not evaluated" annotation.
  std::string_view cluster_unavailable = "no cluster view";
  // Whether the pod requests an accelerator (some checks apply only to those pods).
  bool accelerator = false;
  // The pod's class (policies/classifier.h): serving pods are judged on
  // checkpoint-looking mounts only.
  WorkloadClass workload_class = WorkloadClass::kTraining;
  // Where the job's checkpoints go when a flag or env names object storage ("gs://...");
  // starting with `$`, a var set outside the object ("$(OUT) (set from ConfigMap c)");
  // empty when nothing says so.
  std::string_view checkpoint_destination = {};
  // The flag that switches checkpoint saving off ("--save_strategy no"); empty when none.
  std::string_view checkpointing_off = {};
  // The local path a checkpoint/output flag names ("/workspace/output") and the flag as
  // written ("--output_dir"); empty when the command names none.
  std::string_view save_path = {};
  std::string_view save_flag = {};
  // The workload-table row that judges this part (the wrapped object's own for a part of
  // a Katib trial, the owner's for a Pod); nullptr when no row does.
  const WorkloadKind* row = nullptr;
};

// Gap: one check's conclusion about one pod spec.
struct Gap {
  Outcome outcome = Outcome::kFinding;
  std::string message;  // warning body: what, where, what it costs
  std::string reason;   // short text for the audit annotation
  std::string remedy;   // what to add or change in the manifest (findings only)
};

// not_evaluated / note: the check could not judge (why), or passed with something the
// audit trail should keep (what).
inline Gap not_evaluated(std::string why) { return Gap{Outcome::kNotEvaluated, "", std::move(why), ""}; }
inline Gap note(std::string what) { return Gap{Outcome::kNote, "", std::move(what), ""}; }

using CheckFn = std::function<std::optional<Gap>(const PodSpecView&, const CheckContext&)>;

struct CheckDefinition {
  std::string_view id;
  std::string_view summary;
  // The fix in general terms, for reports that cover many findings (a SARIF rule's
  // help, a summary of folded parts); each Gap carries its own, more specific remedy.
  std::string_view remedy;
  std::vector<std::string> cases;  // case ids; the first is printed in warnings, so the strongest
  CheckFn run;
};

// kDurableVolumeSources: volume sources whose data lives outside the node and outlives
// the pod (the cloud block devices are in-tree network disks too, deprecated, still
// accepted); a `csi` volume is durable when its driver is in the policy's list.
inline constexpr std::array<std::string_view, 14> kDurableVolumeSources = {"persistentVolumeClaim",
                                                                           "nfs",
                                                                           "cephfs",
                                                                           "rbd",
                                                                           "iscsi",
                                                                           "azureFile",
                                                                           "glusterfs",
                                                                           "fc",
                                                                           "gcePersistentDisk",
                                                                           "awsElasticBlockStore",
                                                                           "azureDisk",
                                                                           "cinder",
                                                                           "portworxVolume",
                                                                           "vsphereVolume"};

// CheckpointVolumeCheck: checkpoints would not outlive the pod (the writable mounts of the
// containers that train).
std::optional<Gap> check_checkpoint_volume(const PodSpecView& pod, const CheckContext& ctx);
// DisruptionBudgetCheck: no PodDisruptionBudget in the namespace selects the pod.
std::optional<Gap> check_disruption_budget(const PodSpecView& pod, const CheckContext& ctx);
// ZoneSpreadCheck: the pod can only ever run in one zone.
std::optional<Gap> check_zone_spread(const PodSpecView& pod, const CheckContext& ctx);
// GpuHealthTolerationsCheck: an accelerator pod can land on, or stay on, a failed node or GPU.
std::optional<Gap> check_gpu_health_tolerations(const PodSpecView& pod, const CheckContext& ctx);

// RestartOnFailureCheck: one failure ends the whole run, or disruptions use up a small
// restart budget (the workload-table row's `restart` says how the kind restarts).
std::optional<Gap> check_restart_on_failure(const PodSpecView& pod, const CheckContext& ctx);

// check_registry: every check, in the order findings are reported.
std::span<const CheckDefinition> check_registry();
const CheckDefinition* find_check(std::string_view id);

}  // namespace kubegap
