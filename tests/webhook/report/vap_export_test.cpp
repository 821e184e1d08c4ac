// `export vap`: the shape of what is generated, as text. These tests do not evaluate the
// CEL: e2e_vap (tests/e2e/test_vap.py) does, on a real kube-apiserver, and compares its
// warnings with the webhook's; without Go it is skipped, saying so.
#include "webhook/report/vap_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "policies/policy.h"
#include "webhook/core/errors.h"

namespace kubegap {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ExportVap, OnePolicyAndOneBindingPerKindThatGetsTheChecks) {
  const Policy& policy = default_policy();
  const std::string yaml = export_vap(policy, kVapChecks);
  const std::size_t policies = count(yaml, "kind: ValidatingAdmissionPolicy\n");
  EXPECT_EQ(policies, count(yaml, "kind: ValidatingAdmissionPolicyBinding\n"));
  // Every row (a DaemonSet's gets checkpoint-volume only: its controller adds the
  // tolerations and pins the node), but the wrappers and TrainJob, which CEL cannot judge.
  const auto exportable = std::count_if(policy.workload_kinds.begin(), policy.workload_kinds.end(),
                                        [](const auto& row) { return row.wraps.empty() && row.resolve.empty(); });
  EXPECT_EQ(policies, static_cast<std::size_t>(exportable));
  EXPECT_EQ(policy.workload_kinds.size() - policies, 4u);  // TrainJob, Experiment, AppWrapper, Cron
  EXPECT_EQ(yaml.find("name: kubegap-trainjob.trainer.kubeflow.org\n"), std::string::npos);
  EXPECT_EQ(yaml.find("name: kubegap-experiment.kubeflow.org\n"), std::string::npos);
  EXPECT_NE(yaml.find("name: kubegap-pytorchjob.kubeflow.org\n"), std::string::npos);
  const std::string daemonset = export_vap(policy, {"zone-spread", "gpu-health-tolerations"});
  EXPECT_EQ(daemonset.find("name: kubegap-daemonset.apps\n"), std::string::npos);
  EXPECT_EQ(count(yaml, "validationActions:\n    - Warn\n    - Audit\n"), policies);
  EXPECT_EQ(count(yaml, "failurePolicy: Ignore\n"), policies);
  // The excluded namespaces, the accelerator resources and the fault taints are the policy's.
  EXPECT_NE(yaml.find("- kube-system"), std::string::npos);
  EXPECT_NE(yaml.find("'nvidia.com/gpu'"), std::string::npos);
  EXPECT_NE(yaml.find("r.startsWith('nvidia.com/mig-')"), std::string::npos);
  EXPECT_NE(yaml.find("'nvidia.com/gpu-xid-error'"), std::string::npos);
  // Three warnings per check at most (zone-spread: every policy but the DaemonSet's).
  EXPECT_EQ(count(yaml, "messageExpression: variables.zGapText[2]\n"), policies - 1);
  EXPECT_EQ(count(yaml, "messageExpression: variables.cGapText[2]\n"), policies);
}

TEST(ExportVap, TheChecksFlagSelectsAndUnknownChecksAreRefused) {
  const std::string zone = export_vap(default_policy(), {"zone-spread"});
  EXPECT_EQ(zone.find("gGap"), std::string::npos);
  EXPECT_NE(zone.find("zGap"), std::string::npos);
  EXPECT_THROW(export_vap(default_policy(), {"disruption-budget"}), ConfigError);
  EXPECT_THROW(export_vap(default_policy(), {"no-such-check"}), ConfigError);
}

TEST(ExportVap, TheTemplatePathsBecomeCelThatWalksThem) {
  const std::string yaml = export_vap(default_policy(), {"zone-spread"});
  // A map of replica types: its keys, sorted, then each key's template.
  EXPECT_NE(yaml.find("object.spec.pytorchReplicaSpecs.filter(k, has(object.spec.pytorchReplicaSpecs[k].template) && "
                      "has(object.spec.pytorchReplicaSpecs[k].template.spec)).sort()"),
            std::string::npos);
  // An array labelled by a member: JobSet's replicatedJobs[name].
  EXPECT_NE(yaml.find("object.spec.replicatedJobs.filter(e, has(e.template) && has(e.template.spec)"),
            std::string::npos);
  EXPECT_NE(yaml.find("'replicatedJob ' + (has(e.name) ? string(e.name) : '')"), std::string::npos);
}

TEST(ExportVap, CheckpointVolumeKnowsClaimTemplatesJobVolumesAndEntrypoints) {
  const std::string yaml = export_vap(default_policy(), {"checkpoint-volume"});
  // StatefulSet's volumeClaimTemplates become claims named after each template.
  EXPECT_NE(
      yaml.find("has(object.spec.volumeClaimTemplates) ? object.spec.volumeClaimTemplates.map(e0, [e0]).flatten()"),
      std::string::npos);
  // Volcano's job-level volumes, and a RayJob's entrypoint read as the job's command.
  EXPECT_NE(yaml.find("has(v.volumeClaimName) || has(v.volumeClaim)"), std::string::npos);
  EXPECT_NE(yaml.find("has(object.spec.entrypoint) ? [object.spec.entrypoint] : []"), std::string::npos);
  // The training hints are the policy's: a launcher list and a flag regex.
  EXPECT_NE(yaml.find("'torchrun'"), std::string::npos);
  EXPECT_NE(yaml.find("max[-_]steps"), std::string::npos);
}

TEST(ExportVap, ARowWithTwoIteratingSegmentsIsRefusedWithItsPath) {
  Policy policy = default_policy();
  WorkloadKind row;
  row.group = "example.com";
  row.kind = "Nested";
  row.templates = {{"spec.groups[].members.*.template", "member {}", {}}};
  policy.workload_kinds = {row};
  try {
    export_vap(policy, {"zone-spread"});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.groups[].members.*.template"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kubegap
