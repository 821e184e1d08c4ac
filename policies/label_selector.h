#pragma once
// Label selector semantics of policy/v1 PodDisruptionBudget and metav1.LabelSelector:
// matchLabels AND every matchExpression must hold; an empty selector selects everything;
// a null selector selects nothing (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go,
// LabelSelectorAsSelector, and the policy/v1 PodDisruptionBudgetSpec documentation).
// A selector that LabelSelectorAsSelector refuses (labels.NewRequirement's rules below)
// selects nothing: the eviction API and the disruption controller skip such a budget.
// Kubernetes v1.36 (k8s.io/apimachinery v0.36); tests/oracle holds these to it.

#include <optional>
#include <string>
#include <string_view>
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
// requirement against a label set. It does not judge the requirement's validity: callers
// ask requirement_valid first, as Kubernetes parses before it matches.
bool requirement_matches(const Requirement& requirement, const StringMap& labels);

// Which operators a requirement may use: a metav1.LabelSelector's four, or a node
// selector's six (with Gt and Lt).
enum class Operators { kLabelSelector, kNodeSelector };

// requirement_valid: whether labels.NewRequirement accepts it: a valid label key; In and
// NotIn with values, Exists and DoesNotExist without, Gt and Lt with exactly one integer;
// every value a valid label value; the operator one of `operators`.
bool requirement_valid(const Requirement& requirement, Operators operators);

// valid_label_key / valid_label_value: content.IsLabelKey and IsLabelValue: an optional
// DNS-1123 subdomain prefix and '/', then a name of at most 63 characters, alphanumeric
// at both ends with '-', '_' and '.' between; a value is empty or such a name.
bool valid_label_key(std::string_view key);
bool valid_label_value(std::string_view value);

// parse_label_int: strconv.ParseInt(text, 10, 64), as Gt and Lt read labels and values:
// an optional sign ('+' or '-') and decimal digits, in range.
bool parse_label_int(std::string_view text, long long& out);

}  // namespace kubegap
