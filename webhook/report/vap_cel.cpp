#include "webhook/report/vap_cel.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

#include "policies/checks.h"
#include "policies/evaluate.h"
#include "policies/text.h"
#include "webhook/core/errors.h"
#include "webhook/core/template_path.h"

// The CEL of the exported ValidatingAdmissionPolicies, by check. Helpers that only this
// file uses have no declaration in vap_cel.h.
namespace kubegap::vap_cel {

// --- CEL text --------------------------------------------------------------------------

std::string lower(std::string text) {
  for (auto& c : text) c = ascii_lower(c);
  return text;
}

// quote: a CEL string literal.
std::string quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string list_of(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + quote(item);
  return out + "]";
}

// has_chain: "has(a.b) && has(a.b.c)" for the fields after `base`.
std::string has_chain(const std::string& base, const std::vector<std::string_view>& fields, std::string* end) {
  std::ostringstream out;
  std::string at = base;
  bool first = true;
  for (const auto field : fields) {
    at += '.';
    at += field;
    out << (first ? "" : " && ") << "has(" << at << ")";
    first = false;
  }
  *end = at;
  return first ? "true" : out.str();
}

namespace {

// part_label: the row's part name with {} filled by the CEL expression `label`.
std::string part_label(const std::string& part, const std::string& label) {
  const auto brace = part.find("{}");
  if (brace == std::string::npos) return quote(part);
  return quote(part.substr(0, brace)) + " + " + label + " + " + quote(part.substr(brace + 2));
}

}  // namespace

// accelerator_match: CEL that is true when the resource name `r` matches a pattern
// (`*` at most once: a prefix and a suffix).
std::string accelerator_match(const std::vector<std::string>& patterns) {
  std::vector<std::string> exact, terms;
  for (const auto& p : patterns) {
    const auto star = p.find('*');
    if (star == std::string::npos) {
      exact.push_back(p);
    } else {
      std::string term = "r.startsWith(" + quote(p.substr(0, star)) + ")";
      if (star + 1 < p.size()) term += " && r.endsWith(" + quote(p.substr(star + 1)) + ")";
      terms.push_back("(" + term + ")");
    }
  }
  std::string out = "r in " + list_of(exact);
  for (const auto& t : terms) out += " || " + t;
  return out;
}

// Parts: the CEL variables that list a row's pod templates: three aligned lists,
// `specs` (pod specs), `metas` (their metadata) and `labels` (part names; '' for a Pod or
// a single template). A map is walked through a list of its keys, computed once, so the
// three lists are in one order.
std::vector<Variable> part_variables(const WorkloadKind& row) {
  std::vector<Variable> out;
  std::vector<std::string> specs, metas, labels, keys, holders;
  // A part's own restart knobs are beside its template (a JobSet's child Job spec, a
  // Kubeflow replica, a Volcano task): the value that holds the template.
  const bool held = row.restart.model == "jobset" || row.restart.model == "replicas" || row.restart.model == "volcano";
  const auto holder_of = [](const std::string& element, std::vector<std::string_view> fields) {
    if (fields.empty()) return std::string("{}");  // the template is the element itself
    fields.pop_back();
    std::string at;
    has_chain(element, fields, &at);
    return at;
  };
  int n = 0;
  for (const auto& location : row.templates) {
    if (const std::string problem = validate_template_path(location.path); !problem.empty()) {
      throw ConfigError("export vap: " + row.kind + ": template path \"" + location.path + "\": " + problem);
    }
    const std::vector<TemplatePathSegment> parsed = template_path_segments(location.path);
    const auto* segments = &parsed;
    const auto iterating = std::count_if(segments->begin(), segments->end(),
                                         [](const TemplatePathSegment& s) { return s.array || s.field == "*"; });
    if (iterating > 1) {
      throw ConfigError("export vap: " + row.kind + ": template path \"" + location.path +
                        "\" walks more than one list or map, which the CEL export cannot");
    }
    std::vector<std::string_view> before, after;
    const TemplatePathSegment* iterator = nullptr;
    for (const auto& s : *segments) {
      if (s.array || s.field == "*") {
        iterator = &s;
        if (s.array) before.push_back(s.field);
      } else {
        (iterator ? after : before).push_back(s.field);
      }
    }
    std::string base;
    const std::string reach = has_chain("object", before, &base);
    if (iterator == nullptr) {
      // One template (or the Pod itself): present, or not at all.
      const std::string present = "(" + reach + " && has(" + base + ".spec))";
      specs.push_back(present + " ? [" + base + ".spec] : []");
      metas.push_back(present + " ? [has(" + base + ".metadata) ? " + base + ".metadata : {}] : []");
      labels.push_back(present + " ? [" + part_label(location.part, "''") + "] : []");
      keys.push_back(present + " ? [''] : []");
      holders.push_back(present + " ? [" + (before.empty() ? std::string("{}") : holder_of("object", before)) +
                        "] : []");
      continue;
    }
    std::string var = "t";  // (built in steps: GCC 12 misreads "t" + to_string(...) under -Wrestrict)
    var += std::to_string(n++);
    std::string tip;
    if (iterator->field == "*") {
      // base is the map; `k` its keys.
      const std::string element = base + "[k]";
      const std::string inner = has_chain(element, after, &tip);
      // Sorted: a map's keys come in no fixed order (the webhook's follow the document).
      out.push_back(
          {var, "(" + reach + ") ? " + base + ".filter(k, " + inner + " && has(" + tip + ".spec)).sort() : []"});
      specs.push_back("variables." + var + ".map(k, " + tip + ".spec)");
      metas.push_back("variables." + var + ".map(k, has(" + tip + ".metadata) ? " + tip + ".metadata : {})");
      labels.push_back("variables." + var + ".map(k, " + part_label(location.part, "k") + ")");
      keys.push_back("variables." + var + ".map(k, string(k))");
      holders.push_back("variables." + var + ".map(k, " + holder_of(element, after) + ")");
    } else {
      const std::string inner = has_chain("e", after, &tip);
      out.push_back({var, "(" + reach + ") ? " + base + ".filter(e, " + inner + " && has(" + tip + ".spec)) : []"});
      const std::string key = iterator->key.empty() ? "''"
                                                    : "(has(e." + std::string(iterator->key) + ") ? string(e." +
                                                          std::string(iterator->key) + ") : '')";
      specs.push_back("variables." + var + ".map(e, " + tip + ".spec)");
      metas.push_back("variables." + var + ".map(e, has(" + tip + ".metadata) ? " + tip + ".metadata : {})");
      labels.push_back("variables." + var + ".map(e, " + part_label(location.part, key) + ")");
      keys.push_back("variables." + var + ".map(e, " + key + ")");
      holders.push_back("variables." + var + ".map(e, " + holder_of("e", after) + ")");
    }
  }
  const auto concat = [](const std::vector<std::string>& lists) {
    std::string joined;
    for (const auto& l : lists) joined += (joined.empty() ? "" : " + ") + ("(" + l + ")");
    return joined.empty() ? "[]" : joined;
  };
  out.push_back({"specs", concat(specs)});
  out.push_back({"metas", concat(metas)});
  out.push_back({"labels", concat(labels)});
  out.push_back({"keys", concat(keys)});
  if (held) out.push_back({"holders", concat(holders)});
  return out;
}

// --- what both checks need -------------------------------------------------------------

namespace {

std::string annotation_of(const std::string& holder, const std::string& key) {
  return "(has(" + holder + ".annotations) && " + quote(key) + " in " + holder + ".annotations ? " + holder +
         ".annotations[" + quote(key) + "] : '')";
}

}  // namespace

std::vector<Variable> common_variables(const WorkloadKind& row, const Policy& policy) {
  std::vector<Variable> out;
  // kubegap.io/exempt on the object or any template: the check ids it names.
  // std::string("(") and ("["): GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105329)
  // on a literal + a temporary string here.
  out.push_back({"exempt", std::string("(") + annotation_of("object.metadata", kExemptAnnotation) +
                               ".split(',') + variables.metas.map(m, " + annotation_of("m", kExemptAnnotation) +
                               ".split(',')).flatten()).map(x, x.trim())"});
  out.push_back({"exemptReason", std::string("[") + annotation_of("object.metadata", kExemptReasonAnnotation) +
                                     "] + variables.metas.map(m, " + annotation_of("m", kExemptReasonAnnotation) +
                                     ")"});
  // A part labelled as training: a framework label, or kubegap.io/training-job: "true".
  const std::string labels = list_of(policy.framework_labels);
  const std::string marked = "(has(object.metadata.labels) && object.metadata.labels.exists(l, l in " + labels +
                             ")) || " + annotation_of("object.metadata", "kubegap.io/training-job") + " == 'true'";
  out.push_back({"marked", "variables.metas.map(m, " + marked + " || (has(m.labels) && m.labels.exists(l, l in " +
                               labels + ")) || " + annotation_of("m", "kubegap.io/training-job") + " == 'true')"});
  const std::string match = accelerator_match(policy.accelerator_resources);
  out.push_back({"accel",
                 "variables.specs.map(s, ((has(s.containers) ? s.containers : []) + (has(s.initContainers) ? "
                 "s.initContainers : [])).exists(c, has(c.resources) && ((has(c.resources.limits) && "
                 "c.resources.limits.exists(r, " +
                     match +
                     ")) || (has(c.resources.requests) && "
                     "c.resources.requests.exists(r, " +
                     match + ")))))"});
  // Evaluated: what the webhook's classifier calls a training-job pod (an accelerator, a
  // framework label or the training annotation, or a training kind); a serving kind
  // (Deployment, StatefulSet, ...) gets these checks only when labelled as training.
  const bool serving = row.workload_class == WorkloadClass::kServing;
  const bool training = row.workload_class == WorkloadClass::kTraining;
  out.push_back({"evaluated", serving ? "variables.marked"
                                      : "lists.range(size(variables.specs)).map(i, variables.accel[i] || "
                                        "variables.marked[i]" +
                                            std::string(training ? " || true" : "") + ")"});
  return out;
}

// --- zone-spread (without the cluster view) --------------------------------------------

std::vector<Variable> zone_variables() {
  std::string keys = "[";
  for (const auto key : kZoneLabelKeys) keys += (keys.size() > 1 ? ", " : "") + quote(key);
  keys += "]";
  const std::string terms =
      "(has(s.affinity) && has(s.affinity.nodeAffinity) && "
      "has(s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
      "has(s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms) ? "
      "s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : [])"
      // Only the terms that can admit a node (policies/node_affinity.h, term_can_admit): not
      // empty, and each requirement's operator and value count as labels.NewRequirement
      // and the field selector take them. Label key and value syntax is not checked here
      // (see docs/vap.md).
      ".filter(t, ((has(t.matchExpressions) && size(t.matchExpressions) > 0) || "
      "(has(t.matchFields) && size(t.matchFields) > 0)) && "
      "(!has(t.matchExpressions) || t.matchExpressions.all(r, has(r.operator) && "
      "(r.operator in ['In', 'NotIn'] ? has(r.values) && size(r.values) > 0 : "
      "r.operator in ['Exists', 'DoesNotExist'] ? !has(r.values) || size(r.values) == 0 : "
      "r.operator in ['Gt', 'Lt'] && has(r.values) && size(r.values) == 1))) && "
      "(!has(t.matchFields) || t.matchFields.all(r, has(r.operator) && r.operator in ['In', 'NotIn'] && "
      "has(r.values) && size(r.values) == 1)))";
  std::vector<Variable> out;
  // Per part, per required term: its In requirements on zone keys, then the zones they
  // all allow; then the zone every term pins to one and the same value, or ''.
  out.push_back({"zReqs", "variables.specs.map(s, " + terms +
                              ".map(t, (has(t.matchExpressions) ? t.matchExpressions "
                              ": []).filter(r, has(r.key) && r.key in " +
                              keys +
                              " && has(r.operator) && r.operator == "
                              "'In' && has(r.values))))"});
  out.push_back({"zTerms",
                 "variables.zReqs.map(ts, ts.map(rs, size(rs) == 0 ? [] : rs[0].values.filter(v, rs.all(r, "
                 "v in r.values))))"});
  out.push_back({"zAffinity",
                 "variables.zTerms.map(tc, size(tc) > 0 && tc.all(c, size(c) > 0 && c.all(v, v == "
                 "tc[0][0])) ? string(tc[0][0]) : '')"});
  // The zone nodeSelector's key and value, the first zone key present, or [].
  out.push_back({"zSelector", "variables.specs.map(s, has(s.nodeSelector) ? " + keys +
                                  ".filter(k, k in s.nodeSelector).map(k, [k, string(s.nodeSelector[k])]) : [])"});
  const std::string cost = ": if that zone fails the job cannot restart in another zone";
  // Per part: [warning body, fix, annotation reason], or empty strings: no gap.
  out.push_back(
      {"zGap",
       "lists.range(size(variables.specs)).map(i, !variables.evaluated[i] ? ['', '', ''] : "
       "cel_s(i)(has(s.nodeName) && s.nodeName != '' ? ['bound to node \"' + s.nodeName + '\" by nodeName: if that "
       "node or zone fails the pod cannot run elsewhere', 'replace nodeName with a nodeSelector or affinity that more "
       "than one zone satisfies', 'bound to node ' + s.nodeName + ' by nodeName'] : size(variables.zSelector[i]) > 0 ? "
       "['pinned to zone \"' + variables.zSelector[i][0][1] + '\" by nodeSelector" +
           cost +
           "', 'allow several zones (node affinity In) instead of the zone nodeSelector', 'pinned to zone ' + "
           "variables.zSelector[i][0][1] + ' by nodeSelector ' + variables.zSelector[i][0][0]] : "
           "variables.zAffinity[i] != '' ? ['pinned to zone \"' + variables.zAffinity[i] + '\" by required node "
           "affinity" +
           cost +
           "', 'list more than one zone in the required node affinity', 'pinned to zone ' + "
           "variables.zAffinity[i] + ' by required node affinity'] : ['', '', '']))"});
  return out;
}

// --- gpu-health-tolerations ------------------------------------------------------------

// add_gpu_fault_variables: per part, per GPU-fault taint key, the first toleration of it
// that is a problem (gFaultTols), and its words (gFaults).
void add_gpu_fault_variables(const Policy& policy, std::vector<Variable>& out) {
  const std::string keys = list_of(policy.gpu_fault_taints);
  out.push_back({"gFaultTols", "variables.gTols.map(ts, " + keys +
                                   ".map(k, ts.filter(t, has(t.key) && t.key == k && "
                                   "(!has(t.effect) || t.effect == '' || t.effect == 'NoSchedule' || (t.effect == "
                                   "'NoExecute' && !has(t.tolerationSeconds))))))"});
  const std::string t = "per[j][0]", k = keys + "[j]";
  out.push_back(
      {"gFaults",
       "variables.gFaultTols.map(per, lists.range(size(per)).filter(j, size(per[j]) > 0).map(j, (has(" + t +
           ".effect) && " + t + ".effect == 'NoSchedule') ? ['tolerates GPU-fault taint ' + " + k +
           " + ' (NoSchedule): can land on a quarantined node', 'tolerates GPU-fault taint ' + " + k +
           " + ' (NoSchedule)', 'remove the toleration for ' + " + k + "] : (!has(" + t + ".effect) || " + t +
           ".effect == '') ? ['tolerates GPU-fault taint ' + " + k +
           " + ' for every effect: can be scheduled onto a quarantined node, and that taint never evicts it', "
           "'tolerates GPU-fault taint ' + " +
           k + " + ' for every effect', 'remove the toleration for ' + " + k +
           " + ', or make it NoExecute with tolerationSeconds'] : ['tolerates GPU-fault taint ' + " + k +
           " + ' (NoExecute) with no time limit: that taint never evicts it from a node whose GPU failed', "
           "'tolerates GPU-fault "
           "taint ' + " +
           k +
           " + ' (NoExecute) with no time limit', 'set tolerationSeconds on the toleration "
           "for ' + " +
           k + " + ', or remove it']))"});
}

std::vector<Variable> gpu_variables(const Policy& policy) {
  // The words of the problems of tolerations of every key (policies/gpu_health_tolerations.cpp).
  const std::string every_nx_reason =
      "'tolerates every NoExecute taint (empty key, operator Exists, effect NoExecute) with no time limit'";
  const std::string every_key_fix = "name the taints it tolerates instead of the empty key";
  const std::string bound = std::to_string(policy.health_toleration_seconds_bound);
  const auto matching = [&](std::string_view key) {
    return "variables.gTols.map(ts, ts.filter(t, (!has(t.effect) || t.effect == '' || t.effect == 'NoExecute') && "
           "(((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists') || (has(t.key) && t.key == " +
           quote(key) + " && ((has(t.operator) && t.operator == 'Exists') || !has(t.value) || t.value == '')))))";
  };
  // Seconds on a node with the taint, as the taint-eviction controller counts them: the
  // first toleration that tolerates it decides (GetMatchingTolerations): -1 for no time
  // limit, 0 or less evicts at once. With none, 300 when the API server's
  // DefaultTolerationSeconds plugin adds its own (no toleration of the key, or of every
  // key, for NoExecute or every effect), else 0 (not tolerated: evicted at once).
  const auto seconds = [&](const std::string& m, std::string_view key) {
    return "(size(" + m + ") == 0 ? (variables.gTols[i].exists(t, ((has(t.key) && t.key == " + quote(key) +
           ") || !has(t.key) || t.key == '') && (!has(t.effect) || t.effect == '' || t.effect == 'NoExecute')) ? 0 "
           ": 300) : !has(" +
           m + "[0].tolerationSeconds) ? -1 : " + m + "[0].tolerationSeconds < 0 ? 0 : int(" + m +
           "[0].tolerationSeconds))";
  };
  std::vector<Variable> out;
  out.push_back({"gTols", "variables.specs.map(s, has(s.tolerations) ? s.tolerations : [])"});
  out.push_back({"gNotReady", matching("node.kubernetes.io/not-ready")});
  out.push_back({"gUnreachable", matching("node.kubernetes.io/unreachable")});
  out.push_back({"gSec", "lists.range(size(variables.specs)).map(i, [" +
                             seconds("variables.gNotReady[i]", "node.kubernetes.io/not-ready") + ", " +
                             seconds("variables.gUnreachable[i]", "node.kubernetes.io/unreachable") + "])"});
  // Tolerations of every key: for every effect (every taint), untimed NoExecute, NoSchedule.
  const auto every_key = [](const std::string& effect_test) {
    return "variables.gTols.map(ts, ts.exists(t, (!has(t.key) || t.key == '') && has(t.operator) && "
           "t.operator == 'Exists' && " +
           effect_test + "))";
  };
  out.push_back({"gBlanket", every_key("(!has(t.effect) || t.effect == '')")});
  out.push_back({"gEveryNX", every_key("has(t.effect) && t.effect == 'NoExecute' && !has(t.tolerationSeconds)")});
  out.push_back({"gEveryNS", every_key("has(t.effect) && t.effect == 'NoSchedule'")});
  // The first toleration of both not-ready and unreachable is an untimed one of every
  // NoExecute taint: it decides when the pod leaves an unresponsive node (never).
  const auto decides = [](const std::string& m) {
    return "(size(" + m + ") > 0 && (!has(" + m + "[0].key) || " + m + "[0].key == '') && has(" + m +
           "[0].effect) && " + m + "[0].effect == 'NoExecute' && !has(" + m + "[0].tolerationSeconds))";
  };
  out.push_back({"gDecidesNX", "lists.range(size(variables.specs)).map(i, " + decides("variables.gNotReady[i]") +
                                   " && " + decides("variables.gUnreachable[i]") + ")"});
  // unresponsive(sec, node, which, plural) as the webhook words it.
  const auto unresponsive = [&](const std::string& sec, const std::string& node, const std::string& which,
                                bool plural) {
    const std::string tol = which + (plural ? " tolerations" : " toleration");
    return "(" + sec + " == -1 ? 'is never evicted from " + node + " node (its " + tol + (plural ? " have" : " has") +
           " no time limit)' : 'stays on " + node + " node ' + string(" + sec + ") + ' s before eviction (' + (" + sec +
           " == 300 ? 'default ' : 'its ') + '" + tol + ")')";
  };
  const auto describe_time = [&](const std::string& sec) {
    return "(" + sec + " == -1 ? 'with no time limit (policy: under " + bound + " s)' : 'for ' + string(" + sec +
           ") + ' s (' + (" + sec + " == 300 ? 'API server default; ' : '') + 'policy: under " + bound + " s)')";
  };
  const std::string nr = "variables.gSec[i][0]", ur = "variables.gSec[i][1]";
  const auto slow = [&](const std::string& sec) { return "(" + sec + " == -1 || " + sec + " >= " + bound + ")"; };
  const std::string remedy = "add them as NoExecute tolerations with tolerationSeconds < " + bound;
  // Each problem as [warning, reason, fix]; node health first, then GPU-fault taints.
  out.push_back(
      {"gHealth", "lists.range(size(variables.specs)).map(i, " + slow(nr) + " && " + slow(ur) + " && " + nr +
                      " == " + ur + " ? [[" + unresponsive(nr, "an unresponsive", "not-ready/unreachable", true) +
                      ", 'tolerates not-ready and unreachable nodes ' + " + describe_time(nr) + ", '" + remedy +
                      "']] : (" + slow(nr) + " ? [[" + unresponsive(nr, "a not-ready", "not-ready", false) +
                      ", 'tolerates not-ready nodes ' + " + describe_time(nr) + ", '" + remedy + "']] : []) + (" +
                      slow(ur) + " ? [[" + unresponsive(ur, "an unreachable", "unreachable", false) +
                      ", 'tolerates unreachable nodes ' + " + describe_time(ur) + ", '" + remedy + "']] : []))"});
  add_gpu_fault_variables(policy, out);
  out.push_back(
      {"gProblems",
       "lists.range(size(variables.specs)).map(i, !variables.evaluated[i] || !variables.accel[i] ? [] : "
       "variables.gBlanket[i] ? [['tolerates every taint (empty key, operator Exists): no health or "
       "GPU-fault taint keeps it off or moves it off a failed node', 'tolerates every taint (empty key, "
       "operator Exists)', 'replace the empty-key toleration with tolerations for the taints it needs']] : "
       "(variables.gDecidesNX[i] ? [['tolerates every NoExecute taint (empty key, operator Exists), no "
       "time limit: never evicted from an unresponsive or GPU-failed node', " +
           every_nx_reason + ", '" + every_key_fix +
           "']] : variables.gHealth[i] + (variables.gEveryNX[i] ? [['tolerates every NoExecute "
           "taint (empty key, operator Exists), no time limit: a GPU-fault NoExecute taint never evicts it', " +
           every_nx_reason + ", '" + every_key_fix +
           "']] : [])) + (variables.gEveryNS[i] ? [['tolerates every "
           "NoSchedule taint (empty key, operator Exists): can be scheduled onto a node quarantined for a GPU "
           "fault', 'tolerates every NoSchedule taint (empty key, operator Exists, effect NoSchedule)', '" +
           every_key_fix +
           "']] : []) + "
           "variables.gFaults[i])"});
  out.push_back({"gGap",
                 "variables.gProblems.map(ps, size(ps) == 0 ? ['', '', ''] : [ps.map(p, p[0]).join('; '), "
                 "ps.map(p, p[2]).join('; '), ps.map(p, p[1]).join('; ')])"});
  return out;
}

// cel_s(i)(X): X with `s` standing for variables.specs[i] (CEL has no let in this
// environment, so the text is substituted).
std::string substitute_spec(std::string expression) {
  const std::string marker = "cel_s(i)(";
  for (auto at = expression.find(marker); at != std::string::npos; at = expression.find(marker)) {
    // The argument runs to the matching parenthesis.
    std::size_t depth = 1, end = at + marker.size();
    bool in_string = false;
    for (; end < expression.size() && depth > 0; ++end) {
      const char c = expression[end];
      if (in_string) {
        if (c == '\\')
          ++end;
        else if (c == '\'')
          in_string = false;
      } else if (c == '\'') {
        in_string = true;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        --depth;
      }
    }
    std::string body = expression.substr(at + marker.size(), end - 1 - at - marker.size());
    // Replace the identifier `s` (not part of a longer name or a string).
    std::string out;
    in_string = false;
    for (std::size_t i = 0; i < body.size(); ++i) {
      const char c = body[i];
      if (in_string) {
        out += c;
        if (c == '\\' && i + 1 < body.size())
          out += body[++i];
        else if (c == '\'')
          in_string = false;
        continue;
      }
      if (c == '\'') {
        in_string = true;
        out += c;
        continue;
      }
      const bool ident_before =
          i > 0 && (std::isalnum(static_cast<unsigned char>(body[i - 1])) || body[i - 1] == '_' || body[i - 1] == '.');
      const bool ident_after =
          i + 1 < body.size() && (std::isalnum(static_cast<unsigned char>(body[i + 1])) || body[i + 1] == '_');
      if (c == 's' && !ident_before && !ident_after) {
        out += "variables.specs[i]";
      } else {
        out += c;
      }
    }
    expression = expression.substr(0, at) + "(" + out + ")" + expression.substr(end);
  }
  return expression;
}

// --- the warning and the annotation, grouped as the webhook groups parts ---------------

std::vector<Variable> group_variables(const CheckCel& c, const CheckDefinition& check) {
  const std::string g = "variables." + c.var, v = "variables." + c.var;
  std::vector<Variable> out;
  out.push_back({c.var + "Fail", "lists.range(size(variables.specs)).filter(i, " + g + "[i][0] != '')"});
  // The first part of each distinct (message, fix), in part order; then, for each, the
  // parts that share it and how the warning names them ("a, b, c and 2 more parts").
  out.push_back({c.var + "Heads", v + "Fail.filter(i, !" + v + "Fail.exists(j, j < i && " + g + "[j][0] == " + g +
                                      "[i][0] && " + g + "[j][1] == " + g + "[i][1]))"});
  out.push_back({c.var + "Same", v + "Heads.map(h, " + v + "Fail.filter(i, " + g + "[i][0] == " + g + "[h][0] && " + g +
                                     "[i][1] == " + g + "[h][1]).map(i, variables.labels[i]))"});
  out.push_back({c.var + "Desc", v + "Same.map(ps, size(ps) == 0 || ps[0] == '' ? '' : size(ps) <= 3 ? ps.join(', ') : "
                                     "lists.range(3).map(x, ps[x]).join(', ') + ' and ' + string(size(ps) - 3) + "
                                     "(size(ps) == 4 ? ' more part' : ' more parts'))"});
  out.push_back({c.var + "Body", "lists.range(size(" + v + "Heads)).map(k, (" + v + "Desc[k] != '' ? " + v +
                                     "Desc[k] + ': ' : '') + " + g + "[" + v + "Heads[k]][0])"});
  // As policies/text.cpp format_warning: the fix only when it fits whole in 256 runes.
  const std::string prefix = "kubegap/" + c.id + ": ";
  const std::string suffix = " (case " + check.cases.front() + ")";
  const std::size_t room = kMaxWarningRunes - prefix.size() - suffix.size();
  const std::string body = v + "Body[k]";
  const std::string full =
      quote(prefix) + " + " + body + " + '; fix: ' + " + g + "[" + v + "Heads[k]][1] + " + quote(suffix);
  out.push_back({c.var + "Text", "lists.range(size(" + v + "Heads)).map(k, size(" + full +
                                     ") <= " + std::to_string(kMaxWarningRunes) + " ? " + full + " : " + quote(prefix) +
                                     " + (size(" + body + ") <= " + std::to_string(room) + " ? " + body + " : " + body +
                                     ".substring(0, " + std::to_string(room - 3) + ") + '...') + " + quote(suffix) +
                                     ")"});
  // As policies/text.cpp format_fix_warning: a fix that did not fit is a warning of its
  // own, on one line (160 runes).
  out.push_back({c.var + "Fits", "lists.range(size(" + v + "Heads)).map(k, size(" + full +
                                     ") <= " + std::to_string(kMaxWarningRunes) + ")"});
  const std::string fix_prefix = prefix + "fix: ";
  const std::size_t fix_room = kTargetWarningRunes - fix_prefix.size();
  const std::string fix = g + "[" + v + "Heads[k]][1]";
  out.push_back({c.var + "FixText", "lists.range(size(" + v + "Heads)).map(k, " + quote(fix_prefix) + " + (size(" +
                                        fix + ") <= " + std::to_string(fix_room) + " ? " + fix + " : " + fix +
                                        ".substring(0, " + std::to_string(fix_room - 3) + ") + '...'))"});
  return out;
}

std::string annotation_expression(const CheckCel& c, const CheckDefinition& check) {
  const std::string g = "variables." + c.var, v = "variables." + c.var;
  std::string cases;
  for (const auto& id : check.cases) cases += (cases.empty() ? "" : ", ") + id;
  const auto in = [&](const std::string& k) {
    return "(" + v + "Desc[" + k + "] != '' ? ' (in ' + " + v + "Desc[" + k + "] + ')' : '')";
  };
  const std::string exempt_reason =
      "(variables.exemptReason.exists(r, r != '') ? variables.exemptReason.filter(r, r != '')[0] : 'no reason given (" +
      std::string(kExemptReasonAnnotation) + " not set)')";
  // null: no annotation. The value is a StringValue so that both branches of ?: have
  // one type (string and null have none in common; the API server takes either).
  return "size(" + v + "Heads) == 0 ? null : google.protobuf.StringValue{value: " + quote(c.id) +
         " in variables.exempt ? 'exempt: ' + " + exempt_reason + " + " + in("0") + " : lists.range(size(" + v +
         "Heads)).map(k, " + g + "[" + v + "Heads[k]][2] + " + in("k") + " + '; fix: ' + " + g + "[" + v +
         "Heads[k]][1] + '; cases: " + cases + "').join(' | ')}";
}

}  // namespace kubegap::vap_cel
