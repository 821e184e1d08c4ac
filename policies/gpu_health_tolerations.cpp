// GpuHealthTolerationsCheck: an accelerator pod must leave a failed node or GPU, or the
// job stays bound to it and can stall without an error (cases acme-llm-pretraining-2023,
// llama3-pretraining-2024, opt-175b-logbook-2021).
#include <algorithm>
#include <array>
#include <limits>

#include "policies/checks.h"

namespace kubegap {
namespace {

constexpr std::string_view kNotReady = "node.kubernetes.io/not-ready";
constexpr std::string_view kUnreachable = "node.kubernetes.io/unreachable";
constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();

bool is_blanket(const Toleration& t) {
  return t.key.empty() && t.op == "Exists" && (t.effect.empty() || t.effect == "NoExecute");
}

// tolerates: whether `t` tolerates a taint with this key and an empty value
// (k8s.io/api/core/v1/toleration.go, ToleratesTaint). Effect is checked by the caller.
bool tolerates_key(const Toleration& t, std::string_view key) {
  if (t.key.empty()) return t.op == "Exists";
  if (t.key != key) return false;
  return t.op == "Exists" || t.value.empty();
}

// effective_seconds: how long the pod stays on a node with this NoExecute taint. The
// taint manager uses the smallest tolerationSeconds among matching tolerations, and
// forever when none sets one (pkg/controller/tainteviction, getMinTolerationTime). With
// no matching toleration at all, the API server's DefaultTolerationSeconds plugin adds
// 300 s to pods that are created, so that is what the pod will carry.
std::int64_t effective_seconds(const std::vector<Toleration>& tolerations, std::string_view key) {
  bool matched = false;
  std::int64_t least = kForever;
  for (const auto& t : tolerations) {
    if (!(t.effect.empty() || t.effect == "NoExecute") || !tolerates_key(t, key)) continue;
    matched = true;
    if (t.toleration_seconds) least = std::min(least, std::max<std::int64_t>(0, *t.toleration_seconds));
  }
  return matched ? least : 300;
}

std::string describe_duration(std::int64_t seconds) {
  if (seconds == kForever) return "with no time limit";
  return "for " + std::to_string(seconds) + " s";
}

}  // namespace

std::optional<Gap> check_gpu_health_tolerations(const PodSpecView& pod, const CheckContext& ctx) {
  if (!ctx.accelerator) return std::nullopt;
  std::vector<std::string> problems;

  if (std::any_of(pod.tolerations.begin(), pod.tolerations.end(), is_blanket)) {
    problems.emplace_back("tolerates every taint (empty key, operator Exists)");
  } else {
    const std::int64_t bound = ctx.policy.health_toleration_seconds_bound;
    const std::int64_t not_ready = effective_seconds(pod.tolerations, kNotReady);
    const std::int64_t unreachable = effective_seconds(pod.tolerations, kUnreachable);
    if (not_ready >= bound && unreachable >= bound && not_ready == unreachable) {
      problems.push_back("tolerates not-ready and unreachable nodes " +
                         describe_duration(not_ready));
    } else {
      if (not_ready >= bound) problems.push_back("tolerates not-ready nodes " + describe_duration(not_ready));
      if (unreachable >= bound) problems.push_back("tolerates unreachable nodes " + describe_duration(unreachable));
    }
    for (const auto& taint : ctx.policy.gpu_fault_taints) {
      // Health agents may put a value (an XID code, say) on these taints, so any
      // toleration naming the key counts, whatever its value.
      const auto it = std::find_if(pod.tolerations.begin(), pod.tolerations.end(), [&](const Toleration& t) {
        return t.key == taint && !t.toleration_seconds;
      });
      if (it == pod.tolerations.end()) continue;
      problems.push_back(it->effect == "NoExecute" || it->effect.empty()
                             ? "tolerates GPU-fault taint " + taint + " with no time limit"
                             : "tolerates GPU-fault taint " + taint + " (" + it->effect +
                                   "): schedulable onto a failed GPU");
    }
  }
  if (problems.empty()) return std::nullopt;

  std::string what;
  for (const auto& p : problems) what += (what.empty() ? "" : "; ") + p;
  const std::string bound_text = std::to_string(ctx.policy.health_toleration_seconds_bound);
  return Gap{Outcome::kFinding,
             what + ": a failed GPU node keeps the job bound and it can stall without an error",
             what + " (bound: NoExecute tolerationSeconds < " + bound_text + ")"};
}

}  // namespace kubegap
