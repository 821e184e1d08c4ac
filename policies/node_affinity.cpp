#include "policies/node_affinity.h"

#include <algorithm>

#include "policies/label_selector.h"

namespace kubegap {
namespace {

bool field_requirement_matches(const Requirement& requirement, const NodeInfo& node) {
  // metadata.name is the only field node affinity supports (core/v1 validation).
  if (requirement.key != "metadata.name") return false;
  return requirement_matches(Requirement{"name", requirement.op, requirement.values}, StringMap{{"name", node.name}});
}

bool term_admits(const NodeSelectorTerm& term, const NodeInfo& node) {
  // An empty term matches no node (k8s.io/component-helpers/scheduling/corev1/nodeaffinity).
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  return std::all_of(term.match_expressions.begin(), term.match_expressions.end(),
                     [&](const Requirement& r) { return requirement_matches(r, node.labels); }) &&
         std::all_of(term.match_fields.begin(), term.match_fields.end(),
                     [&](const Requirement& r) { return field_requirement_matches(r, node); });
}

}  // namespace

bool pod_admits_node(const PodSpecView& pod, const NodeInfo& node) {
  for (const auto& [key, value] : pod.node_selector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  if (pod.required_node_terms.empty()) return true;
  return std::any_of(pod.required_node_terms.begin(), pod.required_node_terms.end(),
                     [&](const NodeSelectorTerm& t) { return term_admits(t, node); });
}

}  // namespace kubegap
