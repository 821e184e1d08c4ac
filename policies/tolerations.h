#pragma once
// Taints and tolerations as Kubernetes decides them, for the gpu-health-tolerations check
// and the differential oracle (tests/oracle) that holds these functions to Kubernetes'
// own code:
//   - tolerates_taint: k8s.io/api/core/v1 Toleration.ToleratesTaint;
//   - first_untolerated: k8s.io/component-helpers/scheduling/corev1
//     FindMatchingUntoleratedTaint with the scheduler's filter (NoSchedule, NoExecute);
//   - eviction_delay: the taint-eviction controller (k8s.io/kubernetes
//     pkg/controller/tainteviction: GetMatchingTolerations, then getMinTolerationTime);
//   - with_default_tolerations: the DefaultTolerationSeconds admission plugin.
// Kubernetes v1.36 (the version the e2e tests run).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/pod_view.h"

namespace kubegap {

struct Taint {
  std::string key, value, effect;
};

// tolerates_taint: `t` tolerates `taint`: its effect is empty or the taint's, its key is
// empty or the taint's, and it is Exists, or Equal (or empty) with the taint's value.
bool tolerates_taint(const Toleration& t, const Taint& taint);

// first_untolerated: the index of the first NoSchedule or NoExecute taint no toleration
// tolerates (what keeps a pod off the node); nullopt when every one is tolerated.
std::optional<std::size_t> first_untolerated(const std::vector<Taint>& taints,
                                             const std::vector<Toleration>& tolerations);

// kNeverEvicted: eviction_delay's "the taints never evict the pod".
inline constexpr std::int64_t kNeverEvicted = -1;

// eviction_delay: how long the pod stays on a node with `taints` (only NoExecute ones
// count): 0 when one is not tolerated (evicted at once); else, of the first toleration
// that tolerates each taint, the smallest tolerationSeconds (0 or less: at once), or
// kNeverEvicted when none of them sets one; kNeverEvicted when there is no NoExecute taint.
std::int64_t eviction_delay(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);

// kDefaultTolerationSeconds: the API server's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
inline constexpr std::int64_t kDefaultTolerationSeconds = 300;

// with_default_tolerations: `tolerations` as the API server stores them: a pod with no
// toleration for node.kubernetes.io/not-ready (or unreachable), or for every key, with
// effect NoExecute or every effect, gets {key, Exists, NoExecute, 300 s} added for it. `added`, when given, says
// whether any was.
std::vector<Toleration> with_default_tolerations(std::vector<Toleration> tolerations, bool* added = nullptr);

// adds_default_for: whether the DefaultTolerationSeconds plugin adds its toleration of
// `key` to a pod with `tolerations` (with_default_tolerations, for one key, with no copy).
bool adds_default_for(const std::vector<Toleration>& tolerations, std::string_view key);

}  // namespace kubegap
