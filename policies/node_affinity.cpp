#include "policies/node_affinity.h"

#include <algorithm>

#include "policies/label_selector.h"

namespace kubegap {
namespace {

// field_requirement_valid: nodeSelectorRequirementsAsFieldSelector takes In and NotIn with
// exactly one value, on any key.
bool field_requirement_valid(const Requirement& requirement) {
  return (requirement.op == "In" || requirement.op == "NotIn") && requirement.values.size() == 1;
}

// field_requirement_matches: a node's fields are {metadata.name: its name}; another key
// reads as "" (fields.Set.Get), so `In [""]` on it holds and `NotIn ["x"]` too.
bool field_requirement_matches(const Requirement& requirement, const NodeInfo& node) {
  static const std::string kNone;
  const std::string& field = requirement.key == "metadata.name" ? node.name : kNone;
  return (field == requirement.values.front()) == (requirement.op == "In");
}

// term_admits: as nodeaffinity's nodeSelectorTerm.match. A term that does not parse
// (a requirement labels.NewRequirement refuses, a field requirement other than In/NotIn
// with one value) admits no node; matchFields are not consulted for a node without a
// name (its field set is empty).
bool term_admits(const NodeSelectorTerm& term, const NodeInfo& node) {
  const auto& expressions = term.match_expressions;
  const auto& fields = term.match_fields;
  return std::all_of(expressions.begin(), expressions.end(),
                     [&](const Requirement& r) { return requirement_matches(r, node.labels); }) &&
         (node.name.empty() || std::all_of(fields.begin(), fields.end(),
                                           [&](const Requirement& r) { return field_requirement_matches(r, node); }));
}

}  // namespace

bool term_can_admit(const NodeSelectorTerm& term) {
  const auto& expressions = term.match_expressions;
  const auto& fields = term.match_fields;
  if (expressions.empty() && fields.empty()) return false;  // dropped when the selector is built
  return std::all_of(expressions.begin(), expressions.end(),
                     [](const Requirement& r) { return requirement_valid(r, Operators::kNodeSelector); }) &&
         std::all_of(fields.begin(), fields.end(), field_requirement_valid);
}

RequiredNodeAffinity::RequiredNodeAffinity(const PodSpecView& pod)
    : pod_(pod), required_(pod.required_node_affinity || !pod.required_node_terms.empty()) {
  for (const auto& term : pod.required_node_terms) {
    if (term_can_admit(term)) terms_.push_back(&term);
  }
}

bool RequiredNodeAffinity::admits(const NodeInfo& node) const {
  // nodeSelector is matched as labels.SelectorFromSet: plain equality, no validation.
  for (const auto& [key, value] : pod_.node_selector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  // Required affinity with no term that can admit a node admits no node.
  return !required_ ||
         std::any_of(terms_.begin(), terms_.end(), [&](const NodeSelectorTerm* t) { return term_admits(*t, node); });
}

bool pod_admits_node(const PodSpecView& pod, const NodeInfo& node) { return RequiredNodeAffinity(pod).admits(node); }

}  // namespace kubegap
