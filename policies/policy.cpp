#include "policies/policy.h"

#include <algorithm>

#include "policies/checks.h"

namespace kubegap {

bool Policy::check_enabled(const std::string& check_id) const {
  return std::find(enabled_checks.begin(), enabled_checks.end(), check_id) !=
         enabled_checks.end();
}

bool Policy::namespace_excluded(const std::string& namespace_name) const {
  return std::find(excluded_namespaces.begin(), excluded_namespaces.end(), namespace_name) !=
         excluded_namespaces.end();
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
