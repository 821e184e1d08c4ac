#include "webhook/core/policy_loader.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <utility>

#include "policies/checks.h"
#include "policies/text.h"
#include "webhook/core/file_io.h"
#include "webhook/core/template_path.h"
#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

// plain_list: the Policy member that the key's plain list of strings replaces, or
// nullptr when the key is not one of those.
PatternList Policy::*plain_list(std::string_view key) {
  static constexpr std::array<std::pair<std::string_view, PatternList Policy::*>, 24> kLists = {{
      {"acceleratorResources", &Policy::accelerator_resources},
      {"acceleratorDeviceClasses", &Policy::accelerator_device_classes},
      {"acceleratorAnnotations", &Policy::accelerator_annotations},
      {"frameworkLabels", &Policy::framework_labels},
      {"durableCSIDrivers", &Policy::durable_csi_drivers},
      {"gpuFaultTaints", &Policy::gpu_fault_taints},
      {"excludedNamespaces", &Policy::excluded_namespaces},
      {"checkpointPathHints", &Policy::checkpoint_path_hints},
      {"diagnosticHints", &Policy::diagnostic_hints},
      {"placeholderCommands", &Policy::placeholder_commands},
      {"diagnosticNames", &Policy::diagnostic_names},
      {"clusterDaemons", &Policy::cluster_daemons},
      {"servingPrograms", &Policy::serving_programs},
      {"servingImages", &Policy::serving_images},
      {"checkpointingOff", &Policy::checkpointing_off},
      {"checkpointingOn", &Policy::checkpointing_on},
      {"benchmarkFlags", &Policy::benchmark_flags},
      {"savesOnlyWith", &Policy::saves_only_with},
      {"savesByDefault", &Policy::saves_by_default},
      {"savesNothing", &Policy::saves_nothing},
      {"shortRunFlags", &Policy::short_run_flags},
      {"benchmarkPrograms", &Policy::benchmark_programs},
      {"checkpointStorageFlags", &Policy::checkpoint_storage_flags},
      {"objectStorageSchemes", &Policy::object_storage_schemes},
  }};
  const auto* found = std::find_if(kLists.begin(), kLists.end(), [&](const auto& entry) { return entry.first == key; });
  return found == kLists.end() ? nullptr : found->second;
}

// dotted: "key.name" for error messages, in one allocation (it is built in loops).
std::string dotted(const std::string& key, const std::string& name) {
  std::string out;
  out.reserve(key.size() + 1 + name.size());
  out.append(key).append(1, '.').append(name);
  return out;
}

class PolicyParser {
 public:
  explicit PolicyParser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) const {
    throw ConfigError(source_ + ":" + std::to_string(at.Mark().line + 1) + ": " + key + ": " + what);
  }

  std::vector<std::string> strings(const YAML::Node& node, const std::string& key) const {
    if (!node.IsSequence()) fail(node, key, "expected a list of strings");
    std::vector<std::string> out;
    for (const auto& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) fail(item, key, "expected a non-empty string");
      out.push_back(item.Scalar());
    }
    return out;
  }

  Policy parse(const YAML::Node& root) const {
    Policy policy = default_policy();
    if (!root || root.IsNull()) return policy;
    if (!root.IsMap()) fail(root, "(top level)", "expected a mapping of policy keys");
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "apiVersion") {
        if (value.Scalar() != "kubegap.io/v1alpha1") fail(value, key, "expected kubegap.io/v1alpha1");
      } else if (key == "kind") {
        if (value.Scalar() != "Policy") fail(value, key, "expected Policy");
      } else if (const auto list = plain_list(key)) {
        policy.*list = strings(value, key);
      } else if (key == "enabledChecks") {
        policy.enabled_checks = strings(value, key);
        for (const auto& item : value) {
          if (find_check(item.Scalar()) == nullptr) {
            fail(item, key, "unknown check \"" + item.Scalar() + "\"" + known_checks());
          }
        }
      } else if (key == "checksByClass") {
        checks_by_class(value, key, policy);
      } else if (key == "checkActions") {
        check_actions(value, key, policy);
      } else if (key == "trainingHints") {
        training_hints(value, key, policy.training_hints);
      } else if (key == "savePlaceNames") {
        save_place_names(value, key, policy.save_place_names);
      } else if (key == "inputVolumes") {
        input_volumes(value, key, policy.input_volumes);
      } else if (key == "workloadKinds") {
        merge_workload_kinds(value, policy.workload_kinds, policy.dropped_kinds);
      } else if (key == "healthTolerationSecondsBound") {
        policy.health_toleration_seconds_bound = positive_integer(value, key);
      } else if (key == "maxPartsPerObject") {
        policy.max_parts_per_object = positive_integer(value, key, "parts");
      } else if (key == "minRestartBudget") {
        policy.min_restart_budget = positive_integer(value, key, "restarts");
      } else if (key == "shortRunMaxSteps") {
        policy.short_run_max_steps = positive_integer(value, key, "steps");
      } else if (key == "judgeUnlistedKinds") {
        policy.judge_unlisted_kinds = boolean(value, key);
      } else if (key == "judgeCpuTraining") {
        policy.judge_cpu_training = boolean(value, key);
      } else {
        fail(entry.first, key,
             "unknown key (known: apiVersion, kind, enabledChecks, checkActions, checksByClass, "
             "acceleratorResources, acceleratorDeviceClasses, acceleratorAnnotations, frameworkLabels, "
             "durableCSIDrivers, gpuFaultTaints, healthTolerationSecondsBound, maxPartsPerObject, minRestartBudget, "
             "excludedNamespaces, checkpointPathHints, trainingHints, diagnosticHints, diagnosticNames, "
             "placeholderCommands, "
             "clusterDaemons, servingPrograms, servingImages, checkpointingOff, checkpointingOn, savesOnlyWith, "
             "savesByDefault, savesNothing, "
             "benchmarkFlags, "
             "shortRunFlags, "
             "shortRunMaxSteps, benchmarkPrograms, checkpointStorageFlags, savePlaceNames, inputVolumes, "
             "objectStorageSchemes, workloadKinds, judgeUnlistedKinds, judgeCpuTraining)");
      }
    }
    return policy;
  }

 private:
  // ListField: one key of a mapping of string lists (trainingHints, savePlaceNames).
  struct ListField {
    std::string_view name;
    PatternList* list;
  };

  // string_lists: reads a mapping of string lists into `fields`; a key left out keeps its
  // default list, an unknown one is an error naming the known ones.
  void string_lists(const YAML::Node& value, const std::string& key, std::initializer_list<ListField> fields) const {
    std::string known;
    for (const auto& each : fields) (known += known.empty() ? "" : ", ") += each.name;
    if (!value.IsMap()) fail(value, key, "expected a mapping with " + known);
    for (const auto& entry : value) {
      const std::string name = entry.first.Scalar();
      const std::string field = dotted(key, name);
      const auto* f =
          std::find_if(fields.begin(), fields.end(), [&](const ListField& each) { return each.name == name; });
      if (f == fields.end()) fail(entry.first, field, "unknown key (known: " + known + ")");
      *f->list = strings(entry.second, field);
    }
  }

  void training_hints(const YAML::Node& value, const std::string& key, TrainingHints& hints) const {
    string_lists(value, key,
                 {{"launchers", &hints.launchers},
                  {"flags", &hints.flags},
                  {"scripts", &hints.scripts},
                  {"verbs", &hints.verbs},
                  {"nonTraining", &hints.non_training}});
  }

  void save_place_names(const YAML::Node& value, const std::string& key, SavePlaceNames& names) const {
    string_lists(value, key, {{"saves", &names.saves}, {"places", &names.places}, {"reads", &names.reads}});
  }

  void input_volumes(const YAML::Node& value, const std::string& key, InputVolumes& vocabulary) const {
    string_lists(value, key,
                 {{"names", &vocabulary.names},
                  {"keeps", &vocabulary.keeps},
                  {"readers", &vocabulary.readers},
                  {"writers", &vocabulary.writers}});
  }

  std::vector<PartRole> roles(const YAML::Node& value, const std::string& key) const {
    if (!value.IsSequence())
      fail(value, key, "expected a list of {part, role: coordinator, writer or helper, writerWhen}");
    std::vector<PartRole> out;
    for (const auto& item : value) {
      if (!item.IsMap()) fail(item, key, "expected a mapping {part, role: coordinator, writer or helper, writerWhen}");
      PartRole role;
      for (const auto& entry : item) {
        const std::string name = entry.first.Scalar();
        if (name == "part") {
          role.part_label = scalar(entry.second, key + ".part");
        } else if (name == "role") {
          const std::string kind = scalar(entry.second, key + ".role");
          if (kind != "coordinator" && kind != "writer" && kind != "helper") {
            fail(entry.second, key + ".role", "expected coordinator, writer or helper");
          }
          role.checkpoint_writer = kind == "writer";
          role.helper = kind == "helper";
        } else if (name == "writerWhen") {
          role.writer_when = scalar(entry.second, key + ".writerWhen");
          if (const auto problem = validate_template_path(role.writer_when); !problem.empty()) {
            fail(entry.second, key + ".writerWhen", problem);
          }
        } else {
          fail(entry.first, dotted(key, name), "unknown key (known: part, role, writerWhen)");
        }
      }
      if (role.part_label.empty()) fail(item, key, "every role needs a part (the template's label, e.g. Launcher)");
      if ((role.checkpoint_writer || role.helper) && !role.writer_when.empty()) {
        fail(item, key, "writerWhen is for a coordinator; a writer always writes, a helper never");
      }
      for (const auto& earlier : out) {
        // Part labels compare without case, as the locator matches them.
        if (earlier.part_label.size() == role.part_label.size() && icontains(earlier.part_label, role.part_label)) {
          fail(item, key, "part " + role.part_label + " has a role already; a part has one role");
        }
      }
      out.push_back(std::move(role));
    }
    return out;
  }

  std::string check_id(const YAML::Node& item, const std::string& key) const {
    std::string id = scalar(item, key);
    if (find_check(id) == nullptr) fail(item, key, "unknown check \"" + id + "\"" + known_checks());
    return id;
  }

  WorkloadClass workload_class(const YAML::Node& value, const std::string& key) const {
    const auto parsed = parse_class(scalar(value, key));
    if (!parsed)
      fail(value, key, "unknown class \"" + value.Scalar() + "\" (known: training, serving, auto, diagnostic)");
    return *parsed;
  }

  // checks_by_class: a class left out keeps its default list; a class given replaces it.
  void checks_by_class(const YAML::Node& value, const std::string& key, Policy& policy) const {
    if (!value.IsMap()) fail(value, key, "expected a mapping of class to a list of check ids");
    for (const auto& entry : value) {
      const std::string field = key + "." + entry.first.Scalar();
      const WorkloadClass c = workload_class(entry.first, key);
      if (!entry.second.IsSequence()) fail(entry.second, field, "expected a list of check ids (may be empty: [])");
      std::vector<std::string> ids;
      for (const auto& item : entry.second) ids.push_back(check_id(item, field));
      policy.checks_by_class[c] = std::move(ids);
    }
  }

  void check_actions(const YAML::Node& value, const std::string& key, Policy& policy) const {
    if (!value.IsMap()) fail(value, key, "expected a mapping of check id to warn or audit");
    for (const auto& entry : value) {
      const std::string id = check_id(entry.first, key);
      const std::string action = scalar(entry.second, dotted(key, id));
      if (action != "warn" && action != "audit")
        fail(entry.second, dotted(key, id), "expected warn or audit, got \"" + action + "\"");
      policy.check_actions[id] = action == "warn" ? CheckAction::kWarn : CheckAction::kAudit;
    }
  }

  std::vector<std::string> template_paths(const YAML::Node& value, const std::string& key) const {
    std::vector<std::string> out = strings(value, key);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (const auto problem = validate_template_path(out[i]); !problem.empty()) fail(value[i], key, problem);
    }
    return out;
  }

  bool boolean(const YAML::Node& value, const std::string& key) const {
    bool out = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, out)) fail(value, key, "expected true or false");
    return out;
  }

  std::string scalar(const YAML::Node& value, const std::string& key, bool allow_empty = false) const {
    if (!value.IsScalar() || (!allow_empty && value.Scalar().empty())) fail(value, key, "expected a non-empty string");
    return value.Scalar();
  }

  std::vector<std::pair<std::string, std::string>> label_patterns(const YAML::Node& value,
                                                                  const std::string& key) const {
    if (!value.IsMap()) fail(value, key, "expected a mapping of label key to value pattern");
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& entry : value) out.emplace_back(scalar(entry.first, key), scalar(entry.second, key, true));
    return out;
  }

  PodTemplateLocation location(const YAML::Node& node, const std::string& key) const {
    if (!node.IsMap())
      fail(node, key,
           "expected a mapping with path, part, podLabels and (in wraps) withoutAccelerator, text, configMap");
    PodTemplateLocation out;
    for (const auto& entry : node) {
      const std::string field = key + "." + entry.first.Scalar();
      if (entry.first.Scalar() == "path") {
        out.path = scalar(entry.second, field, true);
        if (const auto problem = validate_template_path(out.path); !problem.empty()) fail(entry.second, field, problem);
      } else if (entry.first.Scalar() == "part") {
        out.part = scalar(entry.second, field, true);
      } else if (entry.first.Scalar() == "podLabels") {
        out.pod_labels = label_patterns(entry.second, field);
      } else if (entry.first.Scalar() == "withoutAccelerator" && key.ends_with(".wraps")) {
        out.without_accelerator = boolean(entry.second, field);
      } else if (entry.first.Scalar() == "text" && key.ends_with(".wraps")) {
        out.text = scalar(entry.second, field);
        if (out.text != "yaml" && out.text != "goTemplate") fail(entry.second, field, "expected yaml or goTemplate");
      } else if (entry.first.Scalar() == "configMap" && key.ends_with(".wraps")) {
        out.config_map = boolean(entry.second, field);
      } else {
        fail(entry.first, field,
             "unknown key (known: path, part, podLabels, and withoutAccelerator, text, configMap in wraps)");
      }
    }
    return out;
  }

  // merge_workload_kinds: a row replaces the default row of the same group and kind,
  // `enabled: false` removes it, and a new group/kind is added: a new CRD needs no code.
  void merge_workload_kinds(const YAML::Node& value, std::vector<WorkloadKind>& rows,
                            std::vector<std::pair<std::string, std::string>>& dropped) const {
    const std::string key = "workloadKinds";
    if (!value.IsSequence()) fail(value, key, "expected a list of workload kinds");
    for (const auto& node : value) {
      if (!node.IsMap())
        fail(node, key, "expected a mapping (group, kind, class, operations, templates, podLabels, enabled)");
      WorkloadKind row;
      row.templates.clear();
      bool enabled = true, has_kind = false;
      for (const auto& entry : node) {
        const std::string name = entry.first.Scalar();
        const std::string field = dotted(key, name);
        const YAML::Node& v = entry.second;
        if (name == "group") {
          row.group = scalar(v, field, true);
        } else if (name == "kind") {
          row.kind = scalar(v, field);
          has_kind = true;
        } else if (name == "class") {
          row.workload_class = workload_class(v, field);
        } else if (name == "training") {
          // 0.1 spelling: true is class training, false is class auto.
          row.workload_class = boolean(v, field) ? WorkloadClass::kTraining : WorkloadClass::kAuto;
        } else if (name == "claimTemplates") {
          row.claim_templates = template_paths(v, field);
        } else if (name == "jobVolumes") {
          row.job_volumes = template_paths(v, field);
        } else if (name == "entrypoints") {
          row.entrypoints = template_paths(v, field);
        } else if (name == "roles") {
          row.roles = roles(v, field);
        } else if (name == "wraps") {
          if (!v.IsSequence()) fail(v, field, "expected a list of {path, part}");
          for (const auto& item : v) row.wraps.push_back(location(item, field));
        } else if (name == "evidencePromotes") {
          row.evidence_promotes = boolean(v, field);
        } else if (name == "resolve") {
          row.resolve = scalar(v, field);
          if (row.resolve != "trainerRuntime") fail(v, field, "expected trainerRuntime, got \"" + row.resolve + "\"");
        } else if (name == "restart") {
          row.restart = restart(v, field);
        } else if (name == "enabled") {
          enabled = boolean(v, field);
        } else if (name == "operations") {
          row.operations = strings(v, field);
          for (const auto& item : v) {
            const auto& op = item.Scalar();
            if (op != "CREATE" && op != "UPDATE") fail(item, field, "expected CREATE or UPDATE, got \"" + op + "\"");
          }
          if (row.operations.empty())
            fail(v, field, "expected at least one of CREATE, UPDATE (use enabled: false to drop a kind)");
        } else if (name == "templates") {
          if (!v.IsSequence()) fail(v, field, "expected a list of {path, part, podLabels}");
          for (const auto& item : v) row.templates.push_back(location(item, field));
        } else if (name == "podLabels") {
          row.pod_labels = label_patterns(v, field);
        } else if (name == "skipChecks") {
          if (!v.IsSequence()) fail(v, field, "expected a list of check ids");
          row.skip_checks.clear();
          for (const auto& item : v) row.skip_checks.push_back(check_id(item, field));
        } else {
          fail(entry.first, field,
               "unknown key (known: group, kind, class, training, operations, templates, claimTemplates, jobVolumes, "
               "entrypoints, roles, wraps, evidencePromotes, resolve, restart, podLabels, skipChecks, enabled)");
        }
      }
      if (!has_kind) fail(node, key, "every entry needs a kind");
      if (enabled && row.templates.empty() && row.wraps.empty())
        fail(node, key, "kind " + row.kind + " needs at least one template (or wraps)");
      const auto same = std::find_if(rows.begin(), rows.end(),
                                     [&](const WorkloadKind& w) { return w.group == row.group && w.kind == row.kind; });
      if (!enabled) {
        if (same != rows.end()) rows.erase(same);
        dropped.emplace_back(row.group, row.kind);  // not judged by its shape either
      } else if (same != rows.end()) {
        *same = std::move(row);
      } else {
        rows.push_back(std::move(row));
      }
    }
  }

  // restart: a row's restart block (RestartRow): the model, then paths and defaults.
  RestartRow restart(const YAML::Node& value, const std::string& key) const {
    if (!value.IsMap()) {
      fail(value, key,
           "expected a mapping {model, budget, budgetDefault, perIndexBudget, rules, replicaRestartDefault, "
           "restarting}");
    }
    RestartRow out;
    const auto path = [&](const YAML::Node& v, const std::string& field) {
      std::string text = scalar(v, field);
      if (const auto problem = validate_template_path(text); !problem.empty()) fail(v, field, problem);
      return text;
    };
    for (const auto& entry : value) {
      const std::string name = entry.first.Scalar();
      const std::string field = dotted(key, name);
      const YAML::Node& v = entry.second;
      if (name == "model") {
        out.model = scalar(v, field);
        if (out.model != "job" && out.model != "jobset" && out.model != "replicas" && out.model != "volcano") {
          fail(v, field, "expected job, jobset, replicas or volcano, got \"" + out.model + "\"");
        }
      } else if (name == "budget") {
        out.budget = path(v, field);
      } else if (name == "budgetDefault") {
        std::int64_t n = 0;
        if (!v.IsScalar() || !YAML::convert<std::int64_t>::decode(v, n) || n < 0) {
          fail(v, field, "expected a non-negative integer (leave it out when an unset budget is unlimited)");
        }
        out.budget_default = n;
      } else if (name == "perIndexBudget") {
        out.per_index_budget = path(v, field);
      } else if (name == "rules") {
        out.rules = path(v, field);
      } else if (name == "replicaRestartDefault") {
        out.replica_restart_default = scalar(v, field);
      } else if (name == "restarting") {
        out.restarting = strings(v, field);
      } else {
        fail(entry.first, field,
             "unknown key (known: model, budget, budgetDefault, perIndexBudget, rules, replicaRestartDefault, "
             "restarting)");
      }
    }
    if (out.model.empty() || out.budget.empty()) fail(value, key, "needs a model and a budget path");
    if (out.model == "replicas" && out.replica_restart_default.empty()) {
      fail(value, key, "model replicas needs replicaRestartDefault (the restartPolicy of a replica that sets none)");
    }
    return out;
  }

  std::int64_t positive_integer(const YAML::Node& value, const std::string& key,
                                std::string_view unit = "seconds") const {
    std::int64_t out = 0;
    if (!value.IsScalar() || !YAML::convert<std::int64_t>::decode(value, out) || out <= 0) {
      fail(value, key, "expected a positive integer (" + std::string(unit) + ")");
    }
    return out;
  }

  static std::string known_checks() {
    std::string out = " (known:";
    for (const auto& check : check_registry()) {
      out += ' ';  // appended apart: GCC 12 misreports `" " + std::string` as overlapping (-Wrestrict)
      out += check.id;
    }
    return out + ")";
  }

  std::string source_;
};

// charge_expanded: the policy's nodes counted as the parser will walk them, an alias each
// time it is used, against the node budget of its text's size: aliases of aliases would
// otherwise make a small file walk millions of rows (and yaml-cpp shares an alias's node,
// so nothing but this walk sees the expansion). Throws ConfigError at the node where the
// budget runs out, or past kMaxDepth.
void charge_expanded(const YAML::Node& node, const std::string& source, std::size_t& budget, int depth) {
  constexpr int kMaxDepth = 64;
  const auto refuse = [&](const std::string& why) {
    throw ConfigError(source + ":" + std::to_string(node.Mark().line + 1) + ": " + why);
  };
  if (budget == 0) refuse("the YAML expands to too many nodes (cyclic or exponential aliases?)");
  --budget;
  if (depth > kMaxDepth) refuse("nested more than " + std::to_string(kMaxDepth) + " levels deep");
  if (node.IsSequence()) {
    for (const auto& item : node) charge_expanded(item, source, budget, depth + 1);
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      charge_expanded(entry.first, source, budget, depth + 1);
      charge_expanded(entry.second, source, budget, depth + 1);
    }
  }
}

}  // namespace

Policy parse_policy(std::string_view yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  std::size_t budget = yaml_node_budget(yaml_text.size());
  charge_expanded(root, source, budget, 0);
  return PolicyParser(source).parse(root);
}

Policy load_policy_file(const std::string& path) { return parse_policy(read_file(path), path); }

}  // namespace kubegap
