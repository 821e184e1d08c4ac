#include "policies/checks.h"

#include <algorithm>

namespace kubegap {

std::span<const CheckDefinition> check_registry() {
  // The one table of checks. Case ids must exist in cases/ (tests/case_library_test).
  static const std::vector<CheckDefinition> kChecks = {
      {kCheckpointVolume,
       "no durable volume for checkpoints",
       {"acme-llm-pretraining-2023", "llama3-pretraining-2024", "opt-175b-logbook-2021",
        "bloom-176b-training-2022"},
       check_checkpoint_volume},
      {kDisruptionBudget,
       "no PodDisruptionBudget selects the pod",
       {"training-evictions-without-pdb", "osm-amsterdam-power-2022",
        "acme-llm-pretraining-2023"},
       check_disruption_budget},
      {kZoneSpread,
       "hard-pinned to a single zone",
       {"osm-amsterdam-power-2022", "gcp-europe-west9-water-2023", "aws-sydney-power-2016"},
       check_zone_spread},
      {kGpuHealthTolerations,
       "no bounded tolerations for node and GPU health taints",
       {"acme-llm-pretraining-2023", "llama3-pretraining-2024", "opt-175b-logbook-2021",
        "bloom-176b-training-2022"},
       check_gpu_health_tolerations},
  };
  return kChecks;
}

const CheckDefinition* find_check(std::string_view id) {
  const auto checks = check_registry();
  const auto it = std::find_if(checks.begin(), checks.end(),
                               [&](const CheckDefinition& c) { return c.id == id; });
  return it == checks.end() ? nullptr : &*it;
}

}  // namespace kubegap
