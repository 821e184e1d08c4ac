#pragma once
// Label selector semantics of policy/v1 PodDisruptionBudget and metav1.LabelSelector:
// matchLabels AND every matchExpression must hold; an empty selector selects everything;
// a null selector selects nothing (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go,
// LabelSelectorAsSelector, and the policy/v1 PodDisruptionBudgetSpec documentation).

#include <optional>
#include <string>
#include <vector>

#include "policies/pod_view.h"

namespace kubegap {

struct LabelSelector {
  StringMap match_labels;
  std::vector<Requirement> match_expressions;
  bool operator==(const LabelSelector&) const = default;
};

// selects: whether `selector` selects an object carrying `labels`. A null selector
// (std::nullopt) selects nothing. Unknown operators select nothing (the API server
// rejects them, so they can only come from a malformed file).
bool selects(const std::optional<LabelSelector>& selector, const StringMap& labels);

// requirement_matches: one In/NotIn/Exists/DoesNotExist (and Gt/Lt for node selectors)
// requirement against a label set.
bool requirement_matches(const Requirement& requirement, const StringMap& labels);

}  // namespace kubegap
