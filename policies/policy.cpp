#include "policies/policy.h"

#include <algorithm>

#include "policies/checks.h"

namespace kubegap {

bool Policy::check_enabled(std::string_view check_id) const {
  return std::find(enabled_checks.begin(), enabled_checks.end(), check_id) !=
         enabled_checks.end();
}

bool Policy::namespace_excluded(const std::string& namespace_name) const {
  return std::find(excluded_namespaces.begin(), excluded_namespaces.end(), namespace_name) !=
         excluded_namespaces.end();
}

const WorkloadKind* Policy::workload_kind(const std::string& group, const std::string& kind) const {
  const auto it = std::find_if(workload_kinds.begin(), workload_kinds.end(),
                               [&](const WorkloadKind& w) { return w.group == group && w.kind == kind; });
  return it == workload_kinds.end() ? nullptr : &*it;
}

std::vector<WorkloadKind> default_workload_kinds() {
  using Labels = std::vector<std::pair<std::string, std::string>>;
  const std::vector<std::string> create_update = {"CREATE", "UPDATE"};
  // Kubeflow training-operator kinds: one map of replica specs each, the same labels
  // (training-operator pkg/controller.v1/common: job-name, replica-type in lower case).
  const auto kubeflow = [&](std::string kind, std::string specs) {
    return WorkloadKind{"kubeflow.org", std::move(kind), true, create_update,
                        {{"spec." + std::move(specs) + ".*.template", "replica {}", {}}},
                        Labels{{"training.kubeflow.org/job-name", "{name}"},
                               {"training.kubeflow.org/replica-type", "{lower}"}}};
  };
  const auto apps = [&](std::string kind, std::vector<std::string> skip = {}) {
    return WorkloadKind{"apps", std::move(kind), false, create_update, {{"spec.template", "", {}}}, {}, std::move(skip)};
  };
  const auto ray_groups = [](const std::string& prefix) {
    return std::vector<PodTemplateLocation>{
        {prefix + "headGroupSpec.template", "head", {{"ray.io/node-type", "head"}}},
        {prefix + "workerGroupSpecs[groupName].template", "workerGroup {}",
         {{"ray.io/node-type", "worker"}, {"ray.io/group", "{}"}}}};
  };
  return {
      {"", "Pod", false, {"CREATE"}, {{"", "", {}}}, {}},
      {"batch", "Job", false, create_update, {{"spec.template", "", {}}},
       {{"batch.kubernetes.io/job-name", "{name}"}, {"job-name", "{name}"}}},
      // A CronJob's Jobs get generated names, so their job-name labels are unknown here.
      {"batch", "CronJob", false, create_update, {{"spec.jobTemplate.spec.template", "", {}}}, {}},
      apps("Deployment"),
      apps("StatefulSet"),
      apps("ReplicaSet"),
      // The DaemonSet controller gives its pods untimed not-ready/unreachable tolerations
      // (pkg/controller/daemon/util, AddOrUpdateDaemonPodTolerations): nothing to fix.
      apps("DaemonSet", {"gpu-health-tolerations"}),
      {"jobset.x-k8s.io", "JobSet", true, create_update,
       {{"spec.replicatedJobs[name].template.spec.template", "replicatedJob {}",
         {{"jobset.sigs.k8s.io/replicatedjob-name", "{}"}}}},
       {{"jobset.sigs.k8s.io/jobset-name", "{name}"}}},
      kubeflow("PyTorchJob", "pytorchReplicaSpecs"),
      kubeflow("TFJob", "tfReplicaSpecs"),
      kubeflow("XGBoostJob", "xgbReplicaSpecs"),
      kubeflow("PaddleJob", "paddleReplicaSpecs"),
      kubeflow("JAXJob", "jaxReplicaSpecs"),
      // mpi-operator v2beta1 labels its pods with the job name and the role.
      {"kubeflow.org", "MPIJob", true, create_update,
       {{"spec.mpiReplicaSpecs.*.template", "replica {}", {}}},
       {{"training.kubeflow.org/job-name", "{name}"}, {"training.kubeflow.org/job-role", "{lower}"}}},
      // A RayJob's cluster gets a generated name, so only the node labels are known.
      {"ray.io", "RayJob", true, create_update, ray_groups("spec.rayClusterSpec."), {}},
      {"ray.io", "RayCluster", true, create_update, ray_groups("spec."), {{"ray.io/cluster", "{name}"}}},
      {"batch.volcano.sh", "Job", true, create_update,
       {{"spec.tasks[name].template", "task {}", {{"volcano.sh/task-spec", "{}"}}}},
       {{"volcano.sh/job-name", "{name}"}}},
      {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", true, create_update,
       {{"spec.leaderWorkerTemplate.leaderTemplate", "leader", {}},
        {"spec.leaderWorkerTemplate.workerTemplate", "worker", {}}},
       {{"leaderworkerset.sigs.k8s.io/name", "{name}"}}},
  };
}

const Policy& default_policy() {
  static const Policy kDefault = [] {
    Policy p;
    for (const auto& check : check_registry()) p.enabled_checks.emplace_back(check.id);
    p.accelerator_resources = {"nvidia.com/gpu",    "nvidia.com/mig-*",       "amd.com/gpu",
                               "gpu.intel.com/*",   "habana.ai/gaudi",        "aws.amazon.com/neuron*",
                               "google.com/tpu"};
    p.framework_labels = {"training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name",
                          "volcano.sh/job-name", "trainer.kubeflow.org/trainjob-ancestor-step",
                          "leaderworkerset.sigs.k8s.io/name"};
    p.durable_csi_drivers = {"gcsfuse.csi.storage.gke.io", "s3.csi.aws.com", "efs.csi.aws.com",
                             "file.csi.azure.com",         "blob.csi.azure.com", "nfs.csi.k8s.io"};
    p.gpu_fault_taints = {"nvidia.com/gpu-xid-error", "nvidia.com/gpu-nvlink-error",
                          "nvidia.com/gpu-error", "nvidia.com/syslog-xid-error"};
    p.health_toleration_seconds_bound = 300;
    p.excluded_namespaces = {"kube-system"};
    p.checkpoint_path_hints = {"checkpoint", "ckpt"};
    p.workload_kinds = default_workload_kinds();
    return p;
  }();
  return kDefault;
}

// Iterative glob match with backtracking to the last '*': linear in practice, no recursion.
bool wildcard_match(const std::string& pattern, const std::string& text) {
  std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace kubegap
