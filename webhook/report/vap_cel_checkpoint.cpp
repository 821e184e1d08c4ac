#include <string>
#include <vector>

#include "policies/checks.h"
#include "webhook/core/template_path.h"
#include "webhook/report/vap_cel.h"

// GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105329) on `literal + std::string`
// temporaries inlined here; the text built is only CEL for `export vap`.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

// The CEL of checkpoint-volume: an approximation of the webhook's classes and of its
// durable-volume rule, in the API server's CEL environment.
namespace kubegap::vap_cel {
namespace {

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

// durable_volume_sources: the volume sources whose data outlives the pod: the webhook's
// own list.
std::vector<std::string> durable_volume_sources() {
  return {kDurableVolumeSources.begin(), kDurableVolumeSources.end()};
}

// add_mount_variables: per part, its volumes, training containers and their writable
// mounts, and the checkpoint-looking ones among them.
void add_mount_variables(const WorkloadKind& row, const Policy& policy, std::vector<Variable>& out) {
  const std::vector<std::string> durable_sources = durable_volume_sources();
  static const std::vector<std::string> kOther = {
      "emptyDir", "hostPath", "ephemeral",  "configMap", "secret",  "projected", "downwardAPI", "csi",
      "image",    "gitRepo",  "flexVolume", "flocker",   "quobyte", "scaleIO",   "storageos",   "photonPersistentDisk"};
  std::string source = "''";
  for (auto it = kOther.rbegin(); it != kOther.rend(); ++it) source = "has(v." + *it + ") ? '" + *it + "' : " + source;
  for (auto it = durable_sources.rbegin(); it != durable_sources.rend(); ++it)
    source = "has(v." + *it + ") ? '" + *it + "' : " + source;
  const std::string accel_match = accelerator_match(policy.accelerator_resources);
  const std::string requests_accel =
      "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, " + accel_match +
      ")) || (has(c.resources.requests) && c.resources.requests.exists(r, " + accel_match + "))))";
  // Claims the controller gives every pod as volumes named after their templates
  // (StatefulSet volumeClaimTemplates, JobSet volumeClaimPolicies): they replace a pod
  // volume of that name, so they come first in the lookups below.
  std::string claims = "[]";
  for (const auto& path : row.claim_templates) {
    claims += " + " + elements_at(path) +
              ".map(c, has(c.metadata) && has(c.metadata.name) ? [string(c.metadata.name), "
              "'persistentVolumeClaim', '', ''] : ['', '', '', ''])";
  }
  out.push_back({"cClaims", claims});
  // Job-level volumes (Volcano): a claim mounted at mountPath in every container.
  std::string job_volumes = "[]";
  for (const auto& path : row.job_volumes) {
    job_volumes += " + " + elements_at(path) +
                   ".filter(v, has(v.mountPath) && (has(v.volumeClaimName) || "
                   "has(v.volumeClaim))).map(v, string(v.mountPath))";
  }
  out.push_back({"cJobVolumes", job_volumes});
  // Per part: each volume as [name, source, CSI or flexVolume driver, 'ro' for a read-only claim].
  out.push_back(
      {"cVolumes", "variables.specs.map(s, variables.cClaims + (has(s.volumes) ? s.volumes.map(v, [string(v.name), " +
                       source +
                       ", has(v.csi) && has(v.csi.driver) ? string(v.csi.driver) : has(v.flexVolume) && "
                       "has(v.flexVolume.driver) ? string(v.flexVolume.driver) : '', has(v.persistentVolumeClaim) "
                       "&& has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly ? 'ro' : "
                       "'']) : []))"});
  // The containers that train: those requesting an accelerator, else every main container.
  out.push_back({"cTrainers", "variables.specs.map(s, has(s.containers) && s.containers.exists(c, " + requests_accel +
                                  ") ? s.containers.filter(c, " + requests_accel +
                                  ") : (has(s.containers) ? s.containers : []))"});
  // Their writable mounts as [path, volume, container].
  out.push_back({"cMounts",
                 "lists.range(size(variables.specs)).map(i, variables.cTrainers[i].map(c, "
                 "has(c.volumeMounts) ? c.volumeMounts.filter(m, !(has(m.readOnly) && m.readOnly) && "
                 "!variables.cVolumes[i].exists(v, v[0] == m.name && v[3] == 'ro')).map(m, [string(m.mountPath), "
                 "string(m.name), string(c.name)]) : []).flatten())"});
  const std::string hints = list_of(policy.checkpoint_path_hints);
  out.push_back({"cCkpt", "variables.cMounts.map(ms, ms.filter(m, " + hints +
                              ".exists(h, m[0].lowerAscii().contains("
                              "h.lowerAscii()))))"});
}

// add_class_variables: per part, the training evidence and the class it is judged as.
void add_class_variables(const WorkloadKind& row, const Policy& policy, std::vector<Variable>& out) {
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
                                    " || w.matches(" + quote(flag_re) +
                                    ") || w.split('/')[size(w.split('/')) - 1].matches(" + quote(script_re) + ")))";
  out.push_back({"cEntrypoint", row.entrypoints.empty() ? "false" : entry_words + ".exists(w, " + word_evidence + ")"});
  out.push_back({"cEvidence",
                 "lists.range(size(variables.specs)).map(i, variables.cEntrypoint || size(variables.cCkpt[i]) > 0 || "
                 "cel_s(i)(has(s.containers) "
                 "? s.containers : []).exists(c, (" +
                     words +
                     ").map(w, w.split(' ')).flatten().exists(w, w != '' && "
                     "(w.split('/')[size(w.split('/')) - 1] in " +
                     launchers + " || w.matches(" + quote(flag_re) + ") || " +
                     "w.split('/')[size(w.split('/')) - 1].matches(" + quote(script_re) +
                     "))) || (has(c.env) && c.env.exists(e, e.name.matches(" + quote(env_re) + ")))))"});
  // The class each part is judged as: 't' training, 's' serving, 'a' auto without
  // evidence (not evaluated), '' not a training-job pod; a coordinator ('c') writes nothing.
  std::vector<std::string> roles;
  roles.reserve(row.roles.size());
  for (const auto& r : row.roles) {
    if (!r.checkpoint_writer) roles.push_back(lower(r.part_label));
  }
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
  out.push_back(
      {"cClass", "lists.range(size(variables.specs)).map(i, !(variables.accel[i] || variables.marked[i] || " +
                     std::string(row.workload_class == WorkloadClass::kTraining || serving_row ? "true" : "false") +
                     ") ? '' : " + coordinator + " ? 'c' : " + klass + ")"});
}

// add_gap_variables: per part, the checkpoint mounts that are not durable, and the gap
// (message, fix, annotation) a finding reports.
void add_gap_variables(const WorkloadKind& row, const Policy& policy, std::vector<Variable>& out) {
  const std::vector<std::string> durable_sources = durable_volume_sources();
  const bool serving_row = row.workload_class == WorkloadClass::kServing;
  const auto where = [](const std::string& v) {
    return "(" + v + "[1] == 'csi' ? 'CSI volume \"' + " + v + "[0] + '\" (driver ' + " + v + "[2] + ')' : " + v +
           "[1] == '' ? 'volume \"' + " + v + "[0] + '\"' : " + v + "[1] + ' \"' + " + v + "[0] + '\"')";
  };
  const auto happens = [](const std::string& v) {
    return "(" + v + "[1] == 'emptyDir' || " + v +
           "[1] == 'ephemeral' ? 'a replacement pod starts with none of them' : " + v +
           "[1] == 'hostPath' ? 'a pod rescheduled to another node starts with none of them' : 'not known to be "
           "durable, a replacement pod may start with none of them')";
  };
  const std::string durable = "(v[1] in " + list_of(durable_sources) +
                              " || (v[1] in ['csi', 'flexVolume'] && v[2] in " + list_of(policy.durable_csi_drivers) +
                              "))";
  // Per part, its checkpoint-looking mounts whose volume is declared and not durable
  // (serving: not those an init container stages).
  out.push_back({"cBad",
                 "lists.range(size(variables.specs)).map(i, variables.cCkpt[i].filter(m, "
                 "variables.cVolumes[i].exists(v, v[0] == m[1] && !" +
                     durable + ")" +
                     std::string(serving_row ? " && !cel_s(i)(has(s.initContainers) ? s.initContainers : []).exists("
                                               "c, has(c.volumeMounts) && c.volumeMounts.exists(x, x.name == m[1]))"
                                             : "") +
                     "))"});
  const std::string bad = "variables.cBad[i][0]";
  const std::string vol = "variables.cVolumes[i].filter(v, v[0] == " + bad + "[1])[0]";
  out.push_back(
      {"cGap",
       "lists.range(size(variables.specs)).map(i, !(variables.cClass[i] in ['t', 's']) ? ['', '', ''] : "
       "size(variables.cBad[i]) > 0 ? ['checkpoints at ' + " +
           bad + "[0] + ' are on ' + " + where(vol) + " + ': ' + " + happens(vol) +
           ", 'mount a PersistentVolumeClaim (or durable CSI volume) at ' + " + bad + "[0], 'checkpoint path ' + " +
           bad + "[0] + ' of container ' + " + bad + "[2] + ' is on ' + " + where(vol) +
           " + ', not durable'] : size(variables.cCkpt[i]) > 0 || variables.cClass[i] == 's' || "
           "size(variables.cJobVolumes) > 0 || "
           "variables.cMounts[i].exists(m, variables.cVolumes[i].exists(v, v[0] == m[1] && " +
           durable +
           ")) || "
           "variables.cMounts[i].exists(m, !variables.cVolumes[i].exists(v, v[0] == m[1])) ? ['', '', ''] : ['no "
           "writable durable volume is mounted: checkpoints saved in the pod are lost when it is replaced', 'mount a "
           "PersistentVolumeClaim where the job saves checkpoints, or save them to object storage', 'no writable "
           "durable volume mounted by the training containers'])"});
}

}  // namespace

std::vector<Variable> checkpoint_variables(const WorkloadKind& row, const Policy& policy) {
  std::vector<Variable> out;
  add_mount_variables(row, policy, out);
  add_class_variables(row, policy, out);
  add_gap_variables(row, policy, out);
  return out;
}

}  // namespace kubegap::vap_cel
