#include "policies/checks.h"

#include <algorithm>

namespace kubegap {

std::span<const CheckDefinition> check_registry() {
  // The one table of checks. Case ids must exist in cases/ and name the check in their
  // `checks` (tests/webhook/case_library_test); the first case is the one a warning prints.
  static const std::vector<CheckDefinition> kChecks = {
      {kCheckpointVolume,
       "checkpoints would not outlive the pod",
       "mount a PersistentVolumeClaim (or durable CSI volume) where the job saves checkpoints, "
       "or save them to object storage",
       {"bloom-176b-training-2022", "opt-175b-logbook-2021", "llama3-pretraining-2024", "acme-llm-pretraining-2023"},
       check_checkpoint_volume},
      {kDisruptionBudget,
       "no PodDisruptionBudget selects the pod",
       "add a PodDisruptionBudget selecting all the job's pods, with an integer minAvailable equal "
       "to their count",
       {"kubetorch-evictions-2025", "training-evictions-without-pdb", "llama3-pretraining-2024"},
       check_disruption_budget},
      {kZoneSpread,
       "hard-pinned to a single zone",
       "allow more than one zone: drop the single-zone nodeSelector, affinity or nodeName, or "
       "add matching nodes in another zone",
       {"aws-sydney-power-2016", "gcp-europe-west9-water-2023", "osm-amsterdam-power-2022"},
       check_zone_spread},
      {kGpuHealthTolerations,
       "an accelerator pod can land on or stay on a failed node",
       "give the not-ready/unreachable NoExecute tolerations a tolerationSeconds below the bound, "
       "and do not tolerate GPU-fault taints",
       {"bloom-176b-training-2022", "llama3-pretraining-2024", "opt-175b-logbook-2021",
        "kubeflow-jobs-hang-on-failed-nodes", "acme-llm-pretraining-2023"},
       check_gpu_health_tolerations},
      {kRestartOnFailure,
       "one failure ends the whole run, or disruptions use up its restarts",
       "give the job a restart budget of 3 or more that drains and preemptions do not use up "
       "(Job: backoffLimit and a podFailurePolicy Ignore rule for DisruptionTarget; JobSet: "
       "failurePolicy.maxRestarts; Kubeflow replicas: restartPolicy ExitCode or OnFailure)",
       {"opt-175b-logbook-2021", "bloom-176b-training-2022", "llama3-pretraining-2024", "acme-llm-pretraining-2023"},
       check_restart_on_failure},
  };
  return kChecks;
}

const CheckDefinition* find_check(std::string_view id) {
  const auto checks = check_registry();
  const auto it = std::find_if(checks.begin(), checks.end(), [&](const CheckDefinition& c) { return c.id == id; });
  return it == checks.end() ? nullptr : &*it;
}

}  // namespace kubegap
