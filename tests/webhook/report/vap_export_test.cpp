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
  EXPECT_EQ(zone.find("rGap"), std::string::npos);
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
  // A FlexVolume's driver is read like a CSI volume's and judged by the same list.
  EXPECT_NE(yaml.find("has(v.flexVolume) && has(v.flexVolume.driver) ? string(v.flexVolume.driver)"),
            std::string::npos);
  EXPECT_NE(yaml.find("v[1] in ['csi', 'flexVolume'] && v[2] in"), std::string::npos);
  EXPECT_NE(yaml.find("'fstab/cifs'"), std::string::npos);
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

// The policy of one row in an export, from its name to the next document.
std::string policy_of(const std::string& yaml, const std::string& name) {
  const auto at = yaml.find("name: " + name + "\n");
  if (at == std::string::npos) return {};
  return yaml.substr(at, yaml.find("\n---", at) - at);
}

TEST(ExportVap, RestartOnFailureOnlyWhereAKindKeepsARestartBudget) {
  Policy policy = default_policy();
  policy.min_restart_budget = 5;
  const std::string yaml = export_vap(policy, {"restart-on-failure"});
  // Kinds with a restart model get a policy; a Pod, a Deployment, a LeaderWorkerSet none.
  for (const char* name : {"kubegap-job.batch", "kubegap-jobset.jobset.x-k8s.io", "kubegap-pytorchjob.kubeflow.org",
                           "kubegap-job.batch.volcano.sh", "kubegap-rayjob.ray.io",
                           "kubegap-clustertrainingruntime.trainer.kubeflow.org"}) {
    EXPECT_NE(policy_of(yaml, name).find("variables.rGapText[0]"), std::string::npos) << name;
  }
  for (const char* name : {"kubegap-pod", "kubegap-deployment.apps", "kubegap-leaderworkerset.leaderworkerset.x-k8s.io",
                           "kubegap-trainjob.trainer.kubeflow.org"}) {
    EXPECT_EQ(yaml.find("name: " + std::string(name) + "\n"), std::string::npos) << name;
  }
  // The knobs are the row's: a Job's budget and podFailurePolicy rules; a JobSet's
  // failurePolicy and each child Job's spec, held beside its template.
  const std::string job = policy_of(yaml, "kubegap-job.batch");
  EXPECT_NE(job.find("has(object.spec.backoffLimitPerIndex)"), std::string::npos);
  EXPECT_NE(job.find("object.spec.podFailurePolicy.rules"), std::string::npos);
  EXPECT_NE(job.find("c.type == 'DisruptionTarget'"), std::string::npos);
  EXPECT_EQ(job.find("name: holders"), std::string::npos);  // a Job's part has no knobs of its own
  const std::string jobset = policy_of(yaml, "kubegap-jobset.jobset.x-k8s.io");
  EXPECT_NE(jobset.find("has(object.spec.failurePolicy.maxRestarts)"), std::string::npos);
  EXPECT_NE(jobset.find("variables.t0.map(e, e.template.spec)"), std::string::npos);
  EXPECT_NE(jobset.find("RestartJobSetAndIgnoreMaxRestarts"), std::string::npos);
  // A Kubeflow replica's restartPolicy is read from the replica; TFJob's default is Never.
  const std::string tfjob = policy_of(yaml, "kubegap-tfjob.kubeflow.org");
  EXPECT_NE(tfjob.find("object.spec.tfReplicaSpecs[k])"), std::string::npos);
  EXPECT_NE(tfjob.find("restartPolicy unset (Never by default)"), std::string::npos);
  // The policy's minimum, the webhook's closing words, and the link to checkpoint-volume.
  EXPECT_NE(jobset.find("to 5 or more"), std::string::npos);
  EXPECT_EQ(jobset.find("to 3 or more"), std::string::npos);
  EXPECT_NE(jobset.find("it resumes only from a durable checkpoint"), std::string::npos);
  EXPECT_NE(jobset.find("(see the checkpoint-volume finding)"), std::string::npos);
  // The cases of the check, in the audit annotation.
  EXPECT_NE(jobset.find("cases: opt-175b-logbook-2021"), std::string::npos);
}

TEST(ExportVap, RestartOnFailureLinksToCheckpointVolumeOnlyWhereThatCheckRuns) {
  Policy policy = default_policy();
  std::erase(policy.enabled_checks, "checkpoint-volume");
  const std::string yaml = export_vap(policy, {"restart-on-failure"});
  EXPECT_NE(yaml.find("variables.rGapText[0]"), std::string::npos);
  EXPECT_EQ(yaml.find("see the checkpoint-volume finding"), std::string::npos);
}

TEST(ExportVap, ARestartPathThroughAListIsRefusedWithItsPath) {
  Policy policy = default_policy();
  WorkloadKind row = *policy.workload_kind("jobset.x-k8s.io", "JobSet");
  row.restart.budget = "spec.policies[].maxRestarts";
  policy.workload_kinds = {row};
  try {
    export_vap(policy, {"restart-on-failure"});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.policies[].maxRestarts"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kubegap
