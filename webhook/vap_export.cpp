#include "webhook/vap_export.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

#include <rapidjson/document.h>

#include "policies/checks.h"
#include "policies/evaluate.h"
#include "policies/text.h"
#include "webhook/template_path.h"
#include "webhook/yaml_json.h"

namespace kubegap {

namespace {

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

// part_label: the row's part name with {} filled by the CEL expression `label`.
std::string part_label(const std::string& part, const std::string& label) {
  const auto brace = part.find("{}");
  if (brace == std::string::npos) return quote(part);
  return quote(part.substr(0, brace)) + " + " + label + " + " + quote(part.substr(brace + 2));
}

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

struct Variable {
  std::string name, expression;
};

// Parts: the CEL variables that list a row's pod templates: three aligned lists,
// `specs` (pod specs), `metas` (their metadata) and `labels` (part names; '' for a Pod or
// a single template). A map is walked through a list of its keys, computed once, so the
// three lists are in one order.
std::vector<Variable> part_variables(const WorkloadKind& row) {
  std::vector<Variable> out;
  std::vector<std::string> specs, metas, labels, keys;
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
      out.push_back({var, "(" + reach + ") ? " + base + ".filter(k, " + inner + " && has(" + tip + ".spec)).sort() : []"});
      specs.push_back("variables." + var + ".map(k, " + tip + ".spec)");
      metas.push_back("variables." + var + ".map(k, has(" + tip + ".metadata) ? " + tip + ".metadata : {})");
      labels.push_back("variables." + var + ".map(k, " + part_label(location.part, "k") + ")");
      keys.push_back("variables." + var + ".map(k, string(k))");
    } else {
      const std::string inner = has_chain("e", after, &tip);
      out.push_back({var, "(" + reach + ") ? " + base + ".filter(e, " + inner + " && has(" + tip + ".spec)) : []"});
      const std::string key = iterator->key.empty() ? "''" : "(has(e." + std::string(iterator->key) + ") ? string(e." +
                                                                   std::string(iterator->key) + ") : '')";
      specs.push_back("variables." + var + ".map(e, " + tip + ".spec)");
      metas.push_back("variables." + var + ".map(e, has(" + tip + ".metadata) ? " + tip + ".metadata : {})");
      labels.push_back("variables." + var + ".map(e, " + part_label(location.part, key) + ")");
      keys.push_back("variables." + var + ".map(e, " + key + ")");
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
  return out;
}

// --- what both checks need -------------------------------------------------------------

std::string annotation_of(const std::string& holder, const std::string& key) {
  return "(has(" + holder + ".annotations) && " + quote(key) + " in " + holder + ".annotations ? " + holder +
         ".annotations[" + quote(key) + "] : '')";
}

std::vector<Variable> common_variables(const WorkloadKind& row, const Policy& policy) {
  std::vector<Variable> out;
  // kubegap.io/exempt on the object or any template: the check ids it names.
  out.push_back({"exempt", "(" + annotation_of("object.metadata", kExemptAnnotation) +
                               ".split(',') + variables.metas.map(m, " + annotation_of("m", kExemptAnnotation) +
                               ".split(',')).flatten()).map(x, x.trim())"});
  out.push_back({"exemptReason",
                 "[" + annotation_of("object.metadata", kExemptReasonAnnotation) + "] + variables.metas.map(m, " +
                     annotation_of("m", kExemptReasonAnnotation) + ")"});
  // A part labelled as training: a framework label, or kubegap.io/training-job: "true".
  const std::string labels = list_of(policy.framework_labels);
  const std::string marked =
      "(has(object.metadata.labels) && object.metadata.labels.exists(l, l in " + labels + ")) || " +
      annotation_of("object.metadata", "kubegap.io/training-job") + " == 'true'";
  out.push_back({"marked", "variables.metas.map(m, " + marked + " || (has(m.labels) && m.labels.exists(l, l in " +
                               labels + ")) || " + annotation_of("m", "kubegap.io/training-job") + " == 'true')"});
  const std::string match = accelerator_match(policy.accelerator_resources);
  out.push_back({"accel",
                 "variables.specs.map(s, ((has(s.containers) ? s.containers : []) + (has(s.initContainers) ? "
                 "s.initContainers : [])).exists(c, has(c.resources) && ((has(c.resources.limits) && "
                 "c.resources.limits.exists(r, " + match + ")) || (has(c.resources.requests) && "
                 "c.resources.requests.exists(r, " + match + ")))))"});
  // Evaluated: what the webhook's classifier calls a training-job pod (an accelerator, a
  // framework label or the training annotation, or a training kind); a serving kind
  // (Deployment, StatefulSet, ...) gets these checks only when labelled as training.
  const bool serving = row.workload_class == WorkloadClass::kServing;
  const bool training = row.workload_class == WorkloadClass::kTraining;
  out.push_back({"evaluated", serving ? "variables.marked"
                                      : "lists.range(size(variables.specs)).map(i, variables.accel[i] || "
                                        "variables.marked[i]" + std::string(training ? " || true" : "") + ")"});
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
      "s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : [])";
  std::vector<Variable> out;
  // Per part, per required term: its In requirements on zone keys, then the zones they
  // all allow; then the zone every term pins to one and the same value, or ''.
  out.push_back({"zReqs", "variables.specs.map(s, " + terms + ".map(t, (has(t.matchExpressions) ? t.matchExpressions "
                          ": []).filter(r, has(r.key) && r.key in " + keys + " && has(r.operator) && r.operator == "
                          "'In' && has(r.values))))"});
  out.push_back({"zTerms", "variables.zReqs.map(ts, ts.map(rs, size(rs) == 0 ? [] : rs[0].values.filter(v, rs.all(r, "
                           "v in r.values))))"});
  out.push_back({"zAffinity", "variables.zTerms.map(tc, size(tc) > 0 && tc.all(c, size(c) > 0 && c.all(v, v == "
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
       "['pinned to zone \"' + variables.zSelector[i][0][1] + '\" by nodeSelector" + cost +
           "', 'allow several zones (node affinity In) instead of the zone nodeSelector', 'pinned to zone ' + "
           "variables.zSelector[i][0][1] + ' by nodeSelector ' + variables.zSelector[i][0][0]] : "
           "variables.zAffinity[i] != '' ? ['pinned to zone \"' + variables.zAffinity[i] + '\" by required node "
           "affinity" + cost + "', 'list more than one zone in the required node affinity', 'pinned to zone ' + "
           "variables.zAffinity[i] + ' by required node affinity'] : ['', '', '']))"});
  return out;
}

// --- gpu-health-tolerations ------------------------------------------------------------

std::vector<Variable> gpu_variables(const Policy& policy) {
  const std::string bound = std::to_string(policy.health_toleration_seconds_bound);
  const auto matching = [&](std::string_view key) {
    return "variables.gTols.map(ts, ts.filter(t, (!has(t.effect) || t.effect == '' || t.effect == 'NoExecute') && "
           "(((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists') || (has(t.key) && t.key == " +
           quote(key) + " && ((has(t.operator) && t.operator == 'Exists') || !has(t.value) || t.value == '')))))";
  };
  // Seconds on a node with the taint: -1 for no time limit; 300 when no toleration
  // matches (the API server's DefaultTolerationSeconds adds it); the smallest otherwise.
  const auto seconds = [&](const std::string& m) {
    return "(size(" + m + ") == 0 ? 300 : !" + m + ".exists(t, has(t.tolerationSeconds)) ? -1 : " + m +
           ".filter(t, has(t.tolerationSeconds)).map(t, t.tolerationSeconds < 0 ? 0 : int(t.tolerationSeconds))"
           ".sort()[0])";
  };
  std::vector<Variable> out;
  out.push_back({"gTols", "variables.specs.map(s, has(s.tolerations) ? s.tolerations : [])"});
  out.push_back({"gNotReady", matching("node.kubernetes.io/not-ready")});
  out.push_back({"gUnreachable", matching("node.kubernetes.io/unreachable")});
  out.push_back({"gSec", "lists.range(size(variables.specs)).map(i, [" + seconds("variables.gNotReady[i]") + ", " +
                             seconds("variables.gUnreachable[i]") + "])"});
  out.push_back({"gBlanket", "variables.gTols.map(ts, ts.exists(t, (!has(t.key) || t.key == '') && has(t.operator) && "
                             "t.operator == 'Exists' && (!has(t.effect) || t.effect == '' || t.effect == 'NoExecute')))"});
  // unresponsive(sec, node, which, plural) as the webhook words it.
  const auto unresponsive = [&](const std::string& sec, const std::string& node, const std::string& which, bool plural) {
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
  out.push_back({"gHealth",
                 "lists.range(size(variables.specs)).map(i, " + slow(nr) + " && " + slow(ur) + " && " + nr + " == " +
                     ur + " ? [[" + unresponsive(nr, "an unresponsive", "not-ready/unreachable", true) +
                     ", 'tolerates not-ready and unreachable nodes ' + " + describe_time(nr) + ", '" + remedy +
                     "']] : (" + slow(nr) + " ? [[" + unresponsive(nr, "a not-ready", "not-ready", false) +
                     ", 'tolerates not-ready nodes ' + " + describe_time(nr) + ", '" + remedy + "']] : []) + (" +
                     slow(ur) + " ? [[" + unresponsive(ur, "an unreachable", "unreachable", false) +
                     ", 'tolerates unreachable nodes ' + " + describe_time(ur) + ", '" + remedy + "']] : []))"});
  // Per part, per GPU-fault taint key: the first toleration of it that is a problem.
  const std::string keys = list_of(policy.gpu_fault_taints);
  out.push_back({"gFaultTols", "variables.gTols.map(ts, " + keys + ".map(k, ts.filter(t, has(t.key) && t.key == k && "
                               "(!has(t.effect) || t.effect == '' || t.effect == 'NoSchedule' || (t.effect == "
                               "'NoExecute' && !has(t.tolerationSeconds))))))"});
  const std::string t = "per[j][0]", k = keys + "[j]";
  out.push_back({"gFaults",
                 "variables.gFaultTols.map(per, lists.range(size(per)).filter(j, size(per[j]) > 0).map(j, (has(" + t +
                     ".effect) && " + t + ".effect == 'NoSchedule') ? ['tolerates GPU-fault taint ' + " + k +
                     " + ' (NoSchedule): can land on a quarantined node', 'tolerates GPU-fault taint ' + " + k +
                     " + ' (NoSchedule)', 'remove the toleration for ' + " + k + "] : (!has(" + t + ".effect) || " + t +
                     ".effect == '') ? ['tolerates GPU-fault taint ' + " + k +
                     " + ' for every effect: can land and stay on a quarantined node', 'tolerates GPU-fault taint ' + " +
                     k + " + ' for every effect', 'remove the toleration for ' + " + k +
                     " + ', or make it NoExecute with tolerationSeconds'] : ['tolerates GPU-fault taint ' + " + k +
                     " + ' (NoExecute) with no time limit: never leaves a node whose GPU failed', 'tolerates GPU-fault "
                     "taint ' + " + k + " + ' (NoExecute) with no time limit', 'set tolerationSeconds on the toleration "
                     "for ' + " + k + " + ', or remove it']))"});
  out.push_back({"gProblems",
                 "lists.range(size(variables.specs)).map(i, !variables.evaluated[i] || !variables.accel[i] ? [] : "
                 "variables.gBlanket[i] ? [['tolerates every taint (empty key, operator Exists): no health or "
                 "GPU-fault taint keeps it off or moves it off a failed node', 'tolerates every taint (empty key, "
                 "operator Exists)', 'replace the empty-key toleration with tolerations for the taints it needs']] : "
                 "variables.gHealth[i] + variables.gFaults[i])"});
  out.push_back({"gGap", "variables.gProblems.map(ps, size(ps) == 0 ? ['', '', ''] : [ps.map(p, p[0]).join('; '), "
                         "ps.map(p, p[2]).join('; '), ps.map(p, p[1]).join('; ')])"});
  return out;
}

// --- checkpoint-volume (an approximation of the webhook's classes) ----------------------

// wildcard_regex: "*train*.py" -> "^.*train.*\\.py$" (RE2, case-insensitive).
std::string wildcard_regex(const std::string& pattern) {
  std::string out = "(?i)^";
  for (const char c : pattern) {
    if (c == '*') {
      out += ".*";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
      out += c;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out + "$";
}

std::string alternation(const std::vector<std::string>& items, bool dash_or_underscore) {
  std::string out;
  for (const auto& item : items) {
    out += out.empty() ? "" : "|";
    for (const char c : item) {
      if (dash_or_underscore && (c == '_' || c == '-')) {
        out += "[-_]";
      } else if (std::isalnum(static_cast<unsigned char>(c))) {
        out += c;
      } else {
        out += '\\';
        out += c;
      }
    }
  }
  return out;
}

// elements_at: CEL for the list of values a template path reaches (fields and `[]`
// arrays only: the paths of claim templates, job volumes and entrypoints), flattened.
std::string elements_at(const std::string& path) {
  const std::vector<TemplatePathSegment> segments = template_path_segments(path);
  // Built from the last segment back: each array maps its elements and flattens.
  std::function<std::string(const std::string&, std::size_t, int)> walk = [&](const std::string& base, std::size_t i,
                                                                           int depth) -> std::string {
    if (i == segments.size()) return "[" + base + "]";
    const std::string at = base + "." + std::string(segments[i].field);
    if (!segments[i].array) return "(has(" + at + ") ? " + walk(at, i + 1, depth) + " : [])";
    const std::string e = "e" + std::to_string(depth);
    return "(has(" + at + ") ? " + at + ".map(" + e + ", " + walk(e, i + 1, depth + 1) + ").flatten() : [])";
  };
  return walk("object", 0, 0);
}

std::vector<Variable> checkpoint_variables(const WorkloadKind& row, const Policy& policy) {
  // The volume sources whose data outlives the pod: the webhook's own list.
  const std::vector<std::string> durable_sources(kDurableVolumeSources.begin(), kDurableVolumeSources.end());
  static const std::vector<std::string> kOther = {
      "emptyDir", "hostPath", "ephemeral", "configMap", "secret", "projected", "downwardAPI", "csi", "image",
      "gitRepo", "flexVolume", "flocker", "quobyte", "scaleIO", "storageos", "photonPersistentDisk"};
  std::string source = "''";
  for (auto it = kOther.rbegin(); it != kOther.rend(); ++it) source = "has(v." + *it + ") ? '" + *it + "' : " + source;
  for (auto it = durable_sources.rbegin(); it != durable_sources.rend(); ++it) source = "has(v." + *it + ") ? '" + *it + "' : " + source;
  const std::string accel_match = accelerator_match(policy.accelerator_resources);
  const std::string requests_accel = "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, " +
                                     accel_match + ")) || (has(c.resources.requests) && c.resources.requests.exists(r, " +
                                     accel_match + "))))";
  std::vector<Variable> out;
  // Claims the controller gives every pod as volumes named after their templates
  // (StatefulSet volumeClaimTemplates, JobSet volumeClaimPolicies): they replace a pod
  // volume of that name, so they come first in the lookups below.
  std::string claims = "[]";
  for (const auto& path : row.claim_templates) {
    claims += " + " + elements_at(path) + ".map(c, has(c.metadata) && has(c.metadata.name) ? [string(c.metadata.name), "
              "'persistentVolumeClaim', '', ''] : ['', '', '', ''])";
  }
  out.push_back({"cClaims", claims});
  // Job-level volumes (Volcano): a claim mounted at mountPath in every container.
  std::string job_volumes = "[]";
  for (const auto& path : row.job_volumes) {
    job_volumes += " + " + elements_at(path) + ".filter(v, has(v.mountPath) && (has(v.volumeClaimName) || "
                   "has(v.volumeClaim))).map(v, string(v.mountPath))";
  }
  out.push_back({"cJobVolumes", job_volumes});
  // Per part: each volume as [name, source, CSI driver, 'ro' for a read-only claim].
  out.push_back({"cVolumes", "variables.specs.map(s, variables.cClaims + (has(s.volumes) ? s.volumes.map(v, [string(v.name), " + source +
                                 ", has(v.csi) && has(v.csi.driver) ? string(v.csi.driver) : '', has(v.persistentVolumeClaim) "
                                 "&& has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly ? 'ro' : "
                                 "'']) : []))"});
  // The containers that train: those requesting an accelerator, else every main container.
  out.push_back({"cTrainers", "variables.specs.map(s, has(s.containers) && s.containers.exists(c, " + requests_accel +
                                  ") ? s.containers.filter(c, " + requests_accel +
                                  ") : (has(s.containers) ? s.containers : []))"});
  // Their writable mounts as [path, volume, container].
  out.push_back({"cMounts", "lists.range(size(variables.specs)).map(i, variables.cTrainers[i].map(c, "
                            "has(c.volumeMounts) ? c.volumeMounts.filter(m, !(has(m.readOnly) && m.readOnly) && "
                            "!variables.cVolumes[i].exists(v, v[0] == m.name && v[3] == 'ro')).map(m, [string(m.mountPath), "
                            "string(m.name), string(c.name)]) : []).flatten())"});
  const std::string hints = list_of(policy.checkpoint_path_hints);
  out.push_back({"cCkpt", "variables.cMounts.map(ms, ms.filter(m, " + hints + ".exists(h, m[0].lowerAscii().contains("
                          "h.lowerAscii()))))"});
  // Training evidence in an auto-class part: a launcher, a training flag or env name, a
  // training script, or a checkpoint-looking mount.
  const std::string words = "(has(c.command) ? c.command : []) + (has(c.args) ? c.args : [])";
  const std::string launchers = list_of(policy.training_hints.launchers);
  const std::string flag_re = "^-+(?i)(" + alternation(policy.training_hints.flags, true) + ")(=.*)?$";
  const std::string env_re = "(?i)^(" + alternation(policy.training_hints.flags, true) + ")$";
  std::string script_re;
  for (const auto& p : policy.training_hints.scripts) script_re += (script_re.empty() ? "" : "|") + wildcard_regex(p);
  // A KubeRay job's entrypoint is the command of the whole job: evidence for every part.
  std::string entry = "[]";
  for (const auto& path : row.entrypoints) entry += " + " + elements_at(path) + ".map(x, string(x))";
  const std::string entry_words = "(" + entry + ").map(w, w.split(' ')).flatten()";
  const std::string word_evidence = "(w != '' && (w.split('/')[size(w.split('/')) - 1] in " + launchers +
                                    " || w.matches(" + quote(flag_re) + ") || w.split('/')[size(w.split('/')) - 1].matches(" +
                                    quote(script_re) + ")))";
  out.push_back({"cEntrypoint", row.entrypoints.empty() ? "false" : entry_words + ".exists(w, " + word_evidence + ")"});
  out.push_back({"cEvidence",
                 "lists.range(size(variables.specs)).map(i, variables.cEntrypoint || size(variables.cCkpt[i]) > 0 || cel_s(i)(has(s.containers) "
                 "? s.containers : []).exists(c, (" + words + ").map(w, w.split(' ')).flatten().exists(w, w != '' && "
                 "(w.split('/')[size(w.split('/')) - 1] in " + launchers + " || w.matches(" + quote(flag_re) +
                     ") || " + "w.split('/')[size(w.split('/')) - 1].matches(" + quote(script_re) +
                     "))) || (has(c.env) && c.env.exists(e, e.name.matches(" + quote(env_re) + ")))))"});
  // The class each part is judged as: 't' training, 's' serving, 'a' auto without
  // evidence (not evaluated), '' not a training-job pod; a coordinator ('c') writes nothing.
  std::vector<std::string> roles;
  for (const auto& r : row.roles) roles.push_back(lower(r.part_label));
  const std::string coordinator = roles.empty() ? "false" : "variables.keys[i].lowerAscii() in " + list_of(roles);
  std::string klass;
  switch (row.workload_class) {
    case WorkloadClass::kTraining:
      klass = "'t'";
      break;
    case WorkloadClass::kServing:
      klass = "variables.marked[i] ? 't' : 's'";
      break;
    default:
      klass = "variables.marked[i] || variables.cEvidence[i] ? 't' : 'a'";
  }
  const bool serving_row = row.workload_class == WorkloadClass::kServing;
  out.push_back({"cClass", "lists.range(size(variables.specs)).map(i, !(variables.accel[i] || variables.marked[i] || " +
                               std::string(row.workload_class == WorkloadClass::kTraining || serving_row ? "true" : "false") +
                               ") ? '' : " + coordinator + " ? 'c' : " + klass + ")"});
  const auto where = [](const std::string& v) {
    return "(" + v + "[1] == 'csi' ? 'CSI volume \"' + " + v + "[0] + '\" (driver ' + " + v + "[2] + ')' : " + v +
           "[1] == '' ? 'volume \"' + " + v + "[0] + '\"' : " + v + "[1] + ' \"' + " + v + "[0] + '\"')";
  };
  const auto happens = [](const std::string& v) {
    return "(" + v + "[1] == 'emptyDir' || " + v + "[1] == 'ephemeral' ? 'a replacement pod starts with none of them' : " +
           v + "[1] == 'hostPath' ? 'a pod rescheduled to another node starts with none of them' : 'not known to be "
           "durable, a replacement pod may start with none of them')";
  };
  const std::string durable = "(v[1] in " + list_of(durable_sources) + " || (v[1] == 'csi' && v[2] in " +
                              list_of(policy.durable_csi_drivers) + "))";
  // Per part, its checkpoint-looking mounts whose volume is declared and not durable
  // (serving: not those an init container stages).
  out.push_back({"cBad", "lists.range(size(variables.specs)).map(i, variables.cCkpt[i].filter(m, "
                         "variables.cVolumes[i].exists(v, v[0] == m[1] && !" + durable + ")" +
                         std::string(serving_row ? " && !cel_s(i)(has(s.initContainers) ? s.initContainers : []).exists("
                                                   "c, has(c.volumeMounts) && c.volumeMounts.exists(x, x.name == m[1]))"
                                                 : "") + "))"});
  const std::string bad = "variables.cBad[i][0]";
  const std::string vol = "variables.cVolumes[i].filter(v, v[0] == " + bad + "[1])[0]";
  out.push_back(
      {"cGap",
       "lists.range(size(variables.specs)).map(i, !(variables.cClass[i] in ['t', 's']) ? ['', '', ''] : "
       "size(variables.cBad[i]) > 0 ? ['checkpoints at ' + " + bad + "[0] + ' are on ' + " + where(vol) + " + ': ' + " +
           happens(vol) + ", 'mount a PersistentVolumeClaim (or durable CSI volume) at ' + " + bad +
           "[0], 'checkpoint path ' + " + bad + "[0] + ' of container ' + " + bad + "[2] + ' is on ' + " + where(vol) +
           " + ', not durable'] : size(variables.cCkpt[i]) > 0 || variables.cClass[i] == 's' || "
           "size(variables.cJobVolumes) > 0 || "
           "variables.cMounts[i].exists(m, variables.cVolumes[i].exists(v, v[0] == m[1] && " + durable + ")) || "
           "variables.cMounts[i].exists(m, !variables.cVolumes[i].exists(v, v[0] == m[1])) ? ['', '', ''] : ['no "
           "writable durable volume is mounted: checkpoints saved in the pod are lost when it is replaced', 'mount a "
           "PersistentVolumeClaim where the job saves checkpoints, or save them to object storage', 'no writable "
           "durable volume mounted by the training containers'])"});
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
        if (c == '\\') ++end;
        else if (c == '\'') in_string = false;
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
        if (c == '\\' && i + 1 < body.size()) out += body[++i];
        else if (c == '\'') in_string = false;
        continue;
      }
      if (c == '\'') {
        in_string = true;
        out += c;
        continue;
      }
      const bool ident_before = i > 0 && (std::isalnum(static_cast<unsigned char>(body[i - 1])) || body[i - 1] == '_' ||
                                          body[i - 1] == '.');
      const bool ident_after = i + 1 < body.size() &&
                               (std::isalnum(static_cast<unsigned char>(body[i + 1])) || body[i + 1] == '_');
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

// kGroups: how many distinct messages of one check get a warning each (the webhook has
// no such cap; a workload with more kinds of the same gap shows the first three).
constexpr int kGroups = 3;

struct CheckCel {
  std::string id, var;  // "zone-spread", "zGap"
};

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
  const std::string full = quote(prefix) + " + " + body + " + '; fix: ' + " + g + "[" + v + "Heads[k]][1] + " + quote(suffix);
  out.push_back({c.var + "Text", "lists.range(size(" + v + "Heads)).map(k, size(" + full + ") <= " +
                                     std::to_string(kMaxWarningRunes) + " ? " + full + " : " + quote(prefix) + " + (size(" +
                                     body + ") <= " + std::to_string(room) + " ? " + body + " : " + body +
                                     ".substring(0, " + std::to_string(room - 3) + ") + '...') + " + quote(suffix) + ")"});
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
  return "size(" + v + "Heads) == 0 ? null : google.protobuf.StringValue{value: " + quote(c.id) + " in variables.exempt ? 'exempt: ' + " +
         exempt_reason + " + " + in("0") + " : lists.range(size(" + v + "Heads)).map(k, " + g + "[" + v +
         "Heads[k]][2] + " + in("k") + " + '; fix: ' + " + g + "[" + v + "Heads[k]][1] + '; cases: " + cases +
         "').join(' | ')}";
}

// --- the documents ---------------------------------------------------------------------

using Doc = rapidjson::Document;
using Value = rapidjson::Value;

Value str(const std::string& text, Doc::AllocatorType& a) { return Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), a); }

Value string_list(const std::vector<std::string>& items, Doc::AllocatorType& a) {
  Value out(rapidjson::kArrayType);
  for (const auto& item : items) out.PushBack(str(item, a), a);
  return out;
}

}  // namespace

std::string vap_policy_name(const WorkloadKind& row) {
  return "kubegap-" + lower(row.kind) + (row.group.empty() ? "" : "." + lower(row.group));
}

std::string export_vap(const Policy& policy, const std::vector<std::string>& checks) {
  for (const auto& id : checks) {
    if (std::find(kVapChecks.begin(), kVapChecks.end(), id) == kVapChecks.end()) {
      std::string known;
      for (const auto& k : kVapChecks) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError("export vap: check \"" + id + "\" has no CEL form (exportable: " + known + ")");
    }
  }
  std::vector<std::string> names;
  std::string out;
  for (const auto& row : policy.workload_kinds) {
    std::vector<CheckCel> wanted;
    for (const auto& id : checks) {
      const bool skipped = std::find(row.skip_checks.begin(), row.skip_checks.end(), id) != row.skip_checks.end();
      // The classes whose parts this export evaluates: training and auto; serving only
      // when labelled as training (which makes it training).
      const bool applies = policy.check_applies(id, WorkloadClass::kTraining);
      if (!skipped && applies && policy.check_enabled(id)) {
        wanted.push_back({id, id == "zone-spread" ? "zGap" : id == "gpu-health-tolerations" ? "gGap" : "cGap"});
      }
    }
    if (wanted.empty()) continue;
    Doc doc(rapidjson::kObjectType);
    auto& a = doc.GetAllocator();
    doc.AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
    doc.AddMember("kind", "ValidatingAdmissionPolicy", a);
    const std::string name = vap_policy_name(row);
    names.push_back(name);
    Value meta(rapidjson::kObjectType);
    meta.AddMember("name", str(name, a), a);
    Value labels(rapidjson::kObjectType);
    labels.AddMember("app.kubernetes.io/managed-by", "kubegap-webhook", a);
    meta.AddMember("labels", labels, a);
    doc.AddMember("metadata", meta, a);
    Value spec(rapidjson::kObjectType);
    spec.AddMember("failurePolicy", "Ignore", a);
    Value constraints(rapidjson::kObjectType);
    Value rules(rapidjson::kArrayType);
    Value rule(rapidjson::kObjectType);
    rule.AddMember("apiGroups", string_list({row.group}, a), a);
    rule.AddMember("apiVersions", string_list({"*"}, a), a);
    rule.AddMember("operations", string_list(row.operations, a), a);
    // The plural: the kind in lower case with an s, as every kind of the default table.
    rule.AddMember("resources", string_list({lower(row.kind) + "s"}, a), a);
    rules.PushBack(rule, a);
    constraints.AddMember("resourceRules", rules, a);
    if (!policy.excluded_namespaces.empty()) {
      Value selector(rapidjson::kObjectType), expressions(rapidjson::kArrayType), requirement(rapidjson::kObjectType);
      requirement.AddMember("key", "kubernetes.io/metadata.name", a);
      requirement.AddMember("operator", "NotIn", a);
      requirement.AddMember("values", string_list(policy.excluded_namespaces, a), a);
      expressions.PushBack(requirement, a);
      selector.AddMember("matchExpressions", expressions, a);
      constraints.AddMember("namespaceSelector", selector, a);
    }
    spec.AddMember("matchConstraints", constraints, a);
    std::vector<Variable> variables = part_variables(row);
    for (auto& v : common_variables(row, policy)) variables.push_back(std::move(v));
    for (const auto& c : wanted) {
      auto own = c.id == "zone-spread"              ? zone_variables()
                 : c.id == "gpu-health-tolerations" ? gpu_variables(policy)
                                                    : checkpoint_variables(row, policy);
      for (auto& v : own) variables.push_back(std::move(v));
      for (auto& v : group_variables(c, *find_check(c.id))) variables.push_back(std::move(v));
    }
    Value vars(rapidjson::kArrayType);
    for (const auto& v : variables) {
      Value item(rapidjson::kObjectType);
      item.AddMember("name", str(v.name, a), a);
      item.AddMember("expression", str(substitute_spec(v.expression), a), a);
      vars.PushBack(item, a);
    }
    spec.AddMember("variables", vars, a);
    Value validations(rapidjson::kArrayType), annotations(rapidjson::kArrayType);
    for (const auto& c : wanted) {
      const CheckDefinition* check = find_check(c.id);
      for (int k = 0; k < kGroups; ++k) {
        Value validation(rapidjson::kObjectType);
        validation.AddMember("expression",
                             str(quote(c.id) + " in variables.exempt || size(variables." + c.var + "Heads) <= " +
                                     std::to_string(k), a),
                             a);
        validation.AddMember("messageExpression",
                             str("variables." + c.var + "Text[" + std::to_string(k) + "]", a), a);
        validation.AddMember("reason", "Invalid", a);
        validations.PushBack(validation, a);
      }
      Value annotation(rapidjson::kObjectType);
      annotation.AddMember("key", str(c.id, a), a);
      annotation.AddMember("valueExpression", str(annotation_expression(c, *check), a), a);
      annotations.PushBack(annotation, a);
    }
    spec.AddMember("validations", validations, a);
    spec.AddMember("auditAnnotations", annotations, a);
    doc.AddMember("spec", spec, a);
    out += "---\n" + json_to_yaml(doc);
  }
  for (const auto& name : names) {
    Doc doc(rapidjson::kObjectType);
    auto& a = doc.GetAllocator();
    doc.AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
    doc.AddMember("kind", "ValidatingAdmissionPolicyBinding", a);
    Value meta(rapidjson::kObjectType);
    meta.AddMember("name", str(name, a), a);
    doc.AddMember("metadata", meta, a);
    Value spec(rapidjson::kObjectType);
    spec.AddMember("policyName", str(name, a), a);
    spec.AddMember("validationActions", string_list({"Warn", "Audit"}, a), a);
    doc.AddMember("spec", spec, a);
    out += "---\n" + json_to_yaml(doc);
  }
  return out;
}

}  // namespace kubegap
