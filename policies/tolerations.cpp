#include "policies/tolerations.h"

#include <algorithm>
#include <array>
#include <limits>

namespace kubegap {

bool tolerates_taint(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";  // any other operator tolerates nothing
}

namespace {

bool tolerated(const Taint& taint, const std::vector<Toleration>& tolerations) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return tolerates_taint(t, taint); });
}

}  // namespace

std::optional<std::size_t> first_untolerated(const std::vector<Taint>& taints,
                                             const std::vector<Toleration>& tolerations) {
  for (std::size_t i = 0; i < taints.size(); ++i) {
    const Taint& taint = taints[i];
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (!tolerated(taint, tolerations)) return i;
  }
  return std::nullopt;
}

std::int64_t eviction_delay(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  // GetMatchingTolerations: for each NoExecute taint, the first toleration that tolerates it.
  std::vector<const Toleration*> used;
  for (const auto& taint : taints) {
    if (taint.effect != "NoExecute") continue;
    const auto first = std::find_if(tolerations.begin(), tolerations.end(),
                                    [&](const Toleration& t) { return tolerates_taint(t, taint); });
    if (first == tolerations.end()) return 0;  // not tolerated: evicted at once
    used.push_back(&*first);
  }
  if (used.empty()) return kNeverEvicted;
  // getMinTolerationTime: the smallest time set; 0 or less evicts at once; none set: never.
  std::optional<std::int64_t> least;
  for (const Toleration* t : used) {
    if (!t->toleration_seconds) continue;
    if (*t->toleration_seconds <= 0) return 0;
    least = std::min(least.value_or(*t->toleration_seconds), *t->toleration_seconds);
  }
  if (!least) return kNeverEvicted;
  // It returns time.Duration(seconds) * time.Second, which wraps past 2^63 ns (about 292
  // years; the API sets no upper bound): negative then means never, as any negative does.
  const auto nanoseconds = static_cast<std::int64_t>(static_cast<std::uint64_t>(*least) * 1'000'000'000ULL);
  if (nanoseconds < 0) return kNeverEvicted;
  return nanoseconds / 1'000'000'000 + (nanoseconds % 1'000'000'000 != 0 ? 1 : 0);  // whole seconds, rounded up
}

bool adds_default_for(const std::vector<Toleration>& tolerations, std::string_view key) {
  // The plugin looks at key and effect only (plugin/pkg/admission/defaulttolerationseconds):
  // a toleration of the key, or of every key, for NoExecute or every effect, whatever its
  // operator and value, means no default.
  return std::none_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    return (t.key == key || t.key.empty()) && (t.effect == "NoExecute" || t.effect.empty());
  });
}

std::vector<Toleration> with_default_tolerations(std::vector<Toleration> tolerations, bool* added) {
  if (added != nullptr) *added = false;
  for (const std::string key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    if (!adds_default_for(tolerations, key)) continue;
    tolerations.push_back(Toleration{key, "Exists", "", "NoExecute", kDefaultTolerationSeconds});
    if (added != nullptr) *added = true;
  }
  return tolerations;
}

}  // namespace kubegap
