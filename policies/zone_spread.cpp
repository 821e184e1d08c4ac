// ZoneSpreadCheck: a job that can only run in one zone cannot restart elsewhere when that
// zone loses power or cooling (cases aws-sydney-power-2016, gcp-europe-west9-water-2023,
// osm-amsterdam-power-2022). It does not ask for multi-zone
// gangs; it asks that a restart is not forbidden from leaving the zone.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <set>

#include "policies/checks.h"
#include "policies/label_selector.h"
#include "policies/node_affinity.h"

namespace kubegap {
namespace {

bool is_zone_key(const std::string& key) {
  return std::find(kZoneLabelKeys.begin(), kZoneLabelKeys.end(), key) != kZoneLabelKeys.end();
}

// single_zone_of_term: the one zone a node selector term allows, when its In
// requirements on zone keys narrow it to exactly one value.
std::optional<std::string> single_zone_of_term(const NodeSelectorTerm& term) {
  std::optional<std::set<std::string>> allowed;
  for (const auto& requirement : term.match_expressions) {
    if (!is_zone_key(requirement.key) || requirement.op != "In") continue;
    std::set<std::string> values(requirement.values.begin(), requirement.values.end());
    if (!allowed) {
      allowed = std::move(values);
    } else {
      std::set<std::string> both;
      std::set_intersection(allowed->begin(), allowed->end(), values.begin(), values.end(),
                            std::inserter(both, both.begin()));
      allowed = std::move(both);
    }
  }
  if (allowed && allowed->size() == 1) return *allowed->begin();
  return std::nullopt;
}

// single_zone_of_affinity: the zone when every required term that can admit a node pins
// the same single zone (an empty or unparsable term admits none, so it widens nothing).
std::optional<std::string> single_zone_of_affinity(const std::vector<NodeSelectorTerm>& terms) {
  std::optional<std::string> zone;
  for (const auto& term : terms) {
    if (!term_can_admit(term)) continue;
    const auto term_zone = single_zone_of_term(term);
    if (!term_zone || (zone && *zone != *term_zone)) return std::nullopt;
    zone = term_zone;
  }
  return zone;
}

// Admitted: the nodes a pod's required selectors admit, summarised: how many, and the zone
// they share (a zone id; NodeSet::kSeveral; NodeSet::kUnzoned when one has no zone). Once
// the answer cannot be a single zone the count stops: it is printed only for a pin.
struct Admitted {
  std::size_t nodes = 0;
  int zone = NodeSet::kUnzoned;
};

void add_zone(Admitted& admitted, int zone) {
  if (admitted.nodes++ == 0) {
    admitted.zone = zone;
  } else if (admitted.zone != zone && admitted.zone != NodeSet::kUnzoned) {
    admitted.zone = zone == NodeSet::kUnzoned ? NodeSet::kUnzoned : NodeSet::kSeveral;
  }
}

// term_candidates: the nodes a required term can admit, from the label index: the union
// of the postings of its first In requirement on a label. nullopt: the term has none, so
// it narrows nothing.
std::optional<std::vector<std::uint32_t>> term_candidates(const NodeSelectorTerm& term, const NodeSet& set) {
  for (const auto& requirement : term.match_expressions) {
    if (requirement.op != "In") continue;
    std::vector<std::uint32_t> out;
    for (const auto& value : requirement.values) {
      if (const auto* posting = set.labelled(requirement.key, value)) {
        std::vector<std::uint32_t> merged;
        std::set_union(out.begin(), out.end(), posting->nodes.begin(), posting->nodes.end(),
                       std::back_inserter(merged));
        out = std::move(merged);
      }
    }
    return out;
  }
  return std::nullopt;
}

// admitted_nodes: the cost follows the pod's selectors, not the cluster: a nodeSelector
// starts from its smallest posting list, required terms from their In requirements, and
// only what no index narrows is scanned.
Admitted admitted_nodes(const PodSpecView& pod, const NodeSet& set) {
  const std::vector<std::uint32_t>* smallest = nullptr;
  for (const auto& [key, value] : pod.node_selector) {
    const auto* posting = set.labelled(key, value);
    if (posting == nullptr) return {};  // no node carries this label
    if (smallest == nullptr || posting->nodes.size() < smallest->size()) smallest = &posting->nodes;
    if (pod.node_selector.size() == 1 && pod.required_node_terms.empty()) {
      return {posting->nodes.size(), posting->zone};  // precomputed per label
    }
  }
  std::optional<std::vector<std::uint32_t>> from_terms;
  if (smallest == nullptr && !pod.required_node_terms.empty()) {
    from_terms.emplace();
    for (const auto& term : pod.required_node_terms) {
      auto candidates = term_candidates(term, set);
      if (!candidates) {
        from_terms.reset();  // this term narrows nothing: scan every node
        break;
      }
      std::vector<std::uint32_t> merged;
      std::set_union(from_terms->begin(), from_terms->end(), candidates->begin(), candidates->end(),
                     std::back_inserter(merged));
      *from_terms = std::move(merged);
    }
    if (from_terms) smallest = &*from_terms;
  }
  Admitted admitted;
  const RequiredNodeAffinity affinity(pod);  // parsed once for every node scanned
  const auto consider = [&](std::size_t position) {
    if (!affinity.admits(set.nodes()[position])) return true;
    add_zone(admitted, set.zone(position));
    return admitted.zone >= 0;  // stop once it cannot be one zone
  };
  if (smallest != nullptr) {
    for (const auto position : *smallest) {
      if (!consider(position)) break;
    }
  } else {
    for (std::size_t position = 0; position < set.nodes().size(); ++position) {
      if (!consider(position)) break;
    }
  }
  return admitted;
}

constexpr std::string_view kCost = ": if that zone fails the job cannot restart in another zone";

Gap pinned(const std::string& zone, const std::string& how, const std::string& detail, std::string remedy) {
  return Gap{Outcome::kFinding, "pinned to zone \"" + zone + "\" by " + how + std::string(kCost),
             "pinned to zone " + zone + " by " + how + detail, std::move(remedy)};
}

}  // namespace

std::optional<Gap> check_zone_spread(const PodSpecView& pod, const CheckContext& ctx) {
  if (!pod.node_name.empty()) {
    const NodeInfo* node = ctx.cluster ? ctx.cluster->node(pod.node_name) : nullptr;
    const std::string* zone = node ? zone_label(node->labels) : nullptr;
    const std::string where = zone ? " in zone \"" + *zone + "\"" : "";
    return Gap{Outcome::kFinding,
               "bound to node \"" + pod.node_name + "\"" + where +
                   " by nodeName: if that node or zone fails the pod cannot run elsewhere",
               "bound to node " + pod.node_name + " by nodeName",
               "replace nodeName with a nodeSelector or affinity that more than one zone satisfies"};
  }
  for (const auto key : kZoneLabelKeys) {
    const auto it = pod.node_selector.find(key);
    if (it != pod.node_selector.end()) {
      return pinned(it->second, "nodeSelector", " " + it->first,
                    "allow several zones (node affinity In) instead of the zone nodeSelector");
    }
  }
  if (const auto zone = single_zone_of_affinity(pod.required_node_terms)) {
    return pinned(*zone, "required node affinity", "", "list more than one zone in the required node affinity");
  }
  // With the cluster's nodes: a selector on, say, a GPU pool that exists in one zone pins
  // the pod as surely as a zone label. Only when the cluster has other zones to offer.
  const bool constrained = !pod.node_selector.empty() || pod.required_node_affinity || !pod.required_node_terms.empty();
  if (ctx.cluster != nullptr && constrained && ctx.cluster->node_set().zone_count() > 1) {
    const NodeSet& set = ctx.cluster->node_set();
    const auto admitted = admitted_nodes(pod, set);
    if (admitted.nodes > 0 && admitted.zone >= 0) {
      const std::string& zone = set.zone_name(admitted.zone);
      return Gap{
          Outcome::kFinding,
          "every node its node selector and affinity admit (" + std::to_string(admitted.nodes) + ") is in zone \"" +
              zone + "\"" + std::string(kCost),
          "the " + std::to_string(admitted.nodes) + " nodes its required selectors admit are all in zone " + zone,
          "add nodes its selectors admit in another zone, or widen the selectors"};
    }
  }
  return std::nullopt;
}

}  // namespace kubegap
