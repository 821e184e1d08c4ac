// GpuHealthTolerationsCheck: an accelerator pod should be kept off nodes quarantined for a
// GPU fault and leave an unresponsive node soon (cases bloom-176b-training-2022,
// llama3-pretraining-2024, opt-175b-logbook-2021, kubeflow-jobs-hang-on-failed-nodes,
// acme-llm-pretraining-2023). The 300 s bound is a policy choice: Kubernetes evicts the
// pod after the default 300 s; the check asks for less on accelerator nodes, where a
// stalled rank holds every other rank's GPUs.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "policies/checks.h"
#include "policies/text.h"
#include "policies/tolerations.h"

namespace kubegap {
namespace {

constexpr std::string_view kNotReady = "node.kubernetes.io/not-ready";
constexpr std::string_view kUnreachable = "node.kubernetes.io/unreachable";
constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kDefaultSeconds = kDefaultTolerationSeconds;

// Tolerations of every key (empty key, operator Exists): for every effect, the pod
// tolerates every taint; for one effect, every taint of that effect (ToleratesTaint).
bool is_every_key(const Toleration& t, std::string_view effect) {
  return t.key.empty() && t.op == "Exists" && t.effect == effect;
}

// TolerationTime: how long the pod stays on a node with a NoExecute taint of some key
// (eviction_delay, after the API server has added its default tolerations: a pod checked
// offline reads as it will when it runs).
struct TolerationTime {
  std::int64_t seconds = kDefaultSeconds;
  bool defaulted = true;
};

// health_taint: the NoExecute taint of a node-health key (kNotReady or kUnreachable), as a
// list of one, made once: its key is too long for a string without an allocation.
const std::vector<Taint>& health_taint(std::string_view key) {
  static const std::vector<Taint> kNotReadyTaint{{std::string(kNotReady), "", "NoExecute"}};
  static const std::vector<Taint> kUnreachableTaint{{std::string(kUnreachable), "", "NoExecute"}};
  return key == kNotReady ? kNotReadyTaint : kUnreachableTaint;
}

TolerationTime effective_time(const std::vector<Toleration>& tolerations, std::string_view key) {
  // When the plugin adds its default, no toleration of the pod tolerates the taint (its
  // condition is wider than ToleratesTaint's), so the default, last, decides: 300 s.
  if (adds_default_for(tolerations, key)) return TolerationTime{};
  const std::int64_t delay = eviction_delay(tolerations, health_taint(key));
  return TolerationTime{delay == kNeverEvicted ? kForever : delay, false};
}

// is_default: 300 s is what the API server gives every pod that sets none, and a pod
// reaching a webhook already carries it: the value says "default", not only its absence
// (so a template checked offline and its pod reviewed at admission read the same).
bool is_default(const TolerationTime& time) { return time.defaulted || time.seconds == kDefaultSeconds; }

// unresponsive: what happens on an unresponsive node ("stays on an unreachable node 600 s
// before eviction (its unreachable toleration)"), `which` naming the taints.
std::string unresponsive(const TolerationTime& time, std::string_view node, std::string_view which, bool plural) {
  const std::string_view tolerations = plural ? " tolerations" : " toleration";
  if (time.seconds == kForever) {
    return concat({"is never evicted from ", node, " node (its ", which, tolerations, plural ? " have" : " has",
                   " no time limit)"});
  }
  return concat({"stays on ", node, " node ", Decimal(time.seconds), " s before eviction (",
                 is_default(time) ? "default " : "its ", which, tolerations, ")"});
}

// describe_time: "for 300 s (API server default; policy: under 120 s)", for the annotation.
// It starts with `lead` ("tolerates not-ready nodes "), so the reason is built once.
std::string describe_time(std::string_view lead, const TolerationTime& time, std::int64_t bound) {
  if (time.seconds == kForever) return concat({lead, "with no time limit (policy: under ", Decimal(bound), " s)"});
  return concat({lead, "for ", Decimal(time.seconds), " s (", is_default(time) ? "API server default; " : "",
                 "policy: under ", Decimal(bound), " s)"});
}

// Problem: one way the pod's tolerations fail, said three ways.
struct Problem {
  std::string warning;  // what happens, for the warning
  std::string reason;   // what the spec says, for the audit annotation
  std::string remedy;   // what to change
};

void node_health_problems(const std::vector<Toleration>& tolerations, std::int64_t bound, std::vector<Problem>& out) {
  const TolerationTime not_ready = effective_time(tolerations, kNotReady);
  const TolerationTime unreachable = effective_time(tolerations, kUnreachable);
  const bool slow_not_ready = not_ready.seconds >= bound;
  const bool slow_unreachable = unreachable.seconds >= bound;
  if (!slow_not_ready && !slow_unreachable) return;
  const auto remedy = [&] {
    return concat({"add them as NoExecute tolerations with tolerationSeconds < ", Decimal(bound)});
  };
  if (slow_not_ready && slow_unreachable && not_ready.seconds == unreachable.seconds) {
    out.push_back({unresponsive(not_ready, "an unresponsive", "not-ready/unreachable", true),
                   describe_time("tolerates not-ready and unreachable nodes ", not_ready, bound), remedy()});
    return;
  }
  if (slow_not_ready) {
    out.push_back({unresponsive(not_ready, "a not-ready", "not-ready", false),
                   describe_time("tolerates not-ready nodes ", not_ready, bound), remedy()});
  }
  if (slow_unreachable) {
    out.push_back({unresponsive(unreachable, "an unreachable", "unreachable", false),
                   describe_time("tolerates unreachable nodes ", unreachable, bound), remedy()});
  }
}

// fault_taint_problem: a toleration of a GPU-fault taint. Health agents such as NVIDIA
// NVSentinel set these taints NoSchedule by default, and a pod that tolerates a
// NoSchedule taint can be placed on the node: only not tolerating it keeps the pod off
// (tolerationSeconds is valid only with NoExecute). Tolerating a PreferNoSchedule taint
// changes nothing that matters, so it is not a problem.
std::optional<Problem> fault_taint_problem(const Toleration& t) {
  const std::string& key = t.key;
  if (t.effect == "NoSchedule") {
    return Problem{"tolerates GPU-fault taint " + key + " (NoSchedule): can land on a quarantined node",
                   "tolerates GPU-fault taint " + key + " (NoSchedule)", "remove the toleration for " + key};
  }
  if (t.effect.empty()) {
    return Problem{"tolerates GPU-fault taint " + key +
                       " for every effect: can be scheduled onto a quarantined node, and that taint never evicts it",
                   "tolerates GPU-fault taint " + key + " for every effect",
                   "remove the toleration for " + key + ", or make it NoExecute with tolerationSeconds"};
  }
  if (t.effect == "NoExecute" && !t.toleration_seconds) {
    // Only that taint: a drain, or another taint it does not tolerate, still evicts it.
    return Problem{"tolerates GPU-fault taint " + key +
                       " (NoExecute) with no time limit: that taint never evicts it from a node whose GPU failed",
                   "tolerates GPU-fault taint " + key + " (NoExecute) with no time limit",
                   "set tolerationSeconds on the toleration for " + key + ", or remove it"};
  }
  return std::nullopt;
}

// decides_untimed: the first toleration of `key`'s NoExecute taint is an untimed
// toleration of every NoExecute taint (the taint-eviction controller uses the first).
bool decides_untimed(const std::vector<Toleration>& tolerations, std::string_view key) {
  const Taint& taint = health_taint(key).front();
  const auto first = std::find_if(tolerations.begin(), tolerations.end(),
                                  [&](const Toleration& t) { return tolerates_taint(t, taint); });
  return first != tolerations.end() && is_every_key(*first, "NoExecute") && !first->toleration_seconds;
}

// every_key_problems: the node-health problems, and those of tolerations of every taint of
// one effect. Their words are short: a warning keeps its fix within 256 runes.
void every_key_problems(const std::vector<Toleration>& tolerations, std::int64_t bound, std::vector<Problem>& out) {
  const std::string remedy = "name the taints it tolerates instead of the empty key";
  const bool untimed_every_noexecute = std::any_of(tolerations.begin(), tolerations.end(), [](const Toleration& t) {
    return is_every_key(t, "NoExecute") && !t.toleration_seconds;
  });
  if (decides_untimed(tolerations, kNotReady) && decides_untimed(tolerations, kUnreachable)) {
    out.push_back(
        {"tolerates every NoExecute taint (empty key, operator Exists), no time limit: never evicted from "
         "an unresponsive or GPU-failed node",
         "tolerates every NoExecute taint (empty key, operator Exists, effect NoExecute) with no time limit", remedy});
  } else {
    node_health_problems(tolerations, bound, out);
    if (untimed_every_noexecute) {
      out.push_back(
          {"tolerates every NoExecute taint (empty key, operator Exists), no time limit: a GPU-fault "
           "NoExecute taint never evicts it",
           "tolerates every NoExecute taint (empty key, operator Exists, effect NoExecute) with no time "
           "limit",
           remedy});
    }
  }
  if (std::any_of(tolerations.begin(), tolerations.end(),
                  [](const Toleration& t) { return is_every_key(t, "NoSchedule"); })) {
    out.push_back(
        {"tolerates every NoSchedule taint (empty key, operator Exists): can be scheduled onto a node "
         "quarantined for a GPU fault",
         "tolerates every NoSchedule taint (empty key, operator Exists, effect NoSchedule)", remedy});
  }
}

// join: the problems' `field`s, "; " between them; moved out, not copied (most pods have one
// problem).
std::string join(std::vector<Problem>& problems, std::string Problem::*field) {
  if (problems.size() == 1) return std::move(problems.front().*field);
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += "; ";
    out += p.*field;
  }
  return out;
}

}  // namespace

std::optional<Gap> check_gpu_health_tolerations(const PodSpecView& pod, const CheckContext& ctx) {
  if (!ctx.accelerator) return std::nullopt;
  std::vector<Problem> problems;
  problems.reserve(4);  // one allocation: a pod rarely has more

  if (std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                  [](const Toleration& t) { return is_every_key(t, ""); })) {
    problems.push_back(
        {"tolerates every taint (empty key, operator Exists): no health or GPU-fault taint keeps it "
         "off or moves it off a failed node",
         "tolerates every taint (empty key, operator Exists)",
         "replace the empty-key toleration with tolerations for the taints it needs"});
  } else {
    every_key_problems(pod.tolerations, ctx.policy.health_toleration_seconds_bound, problems);
    for (const auto& taint : ctx.policy.gpu_fault_taints) {
      // Health agents may put a value (an XID code, say) on these taints, so any
      // toleration naming the key counts, whatever its value.
      for (const auto& t : pod.tolerations) {
        if (t.key != taint) continue;
        if (auto problem = fault_taint_problem(t)) {
          problems.push_back(std::move(*problem));
          break;
        }
      }
    }
  }
  if (problems.empty()) return std::nullopt;
  return Gap{Outcome::kFinding, join(problems, &Problem::warning), join(problems, &Problem::reason),
             join(problems, &Problem::remedy)};
}

}  // namespace kubegap
