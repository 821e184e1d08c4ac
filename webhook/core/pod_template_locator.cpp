#include "webhook/core/pod_template_locator.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "webhook/core/object_decoder.h"
#include "webhook/core/restart_knobs.h"
#include "webhook/core/template_discovery.h"
#include "webhook/core/trainjob_runtime.h"
#include "webhook/core/wrapped_text.h"

namespace kubegap {
namespace {

using rapidjson::Value;

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// command_line: a command given as a list of words (`[python, train.py, --lr, "1e-4"]`)
// as one line, after the program the list's name says runs it (template_discovery.h:
// command_program). Entrypoints are read as shell lines, whose reader splits words at
// spaces and quotes alike, so words are not quoted.
std::string command_line(JsonReader& reader, const Value& list, const JsonPath& at, std::string_view path) {
  std::string line(command_program(path));
  for (const auto& word : reader.string_list(&list, at)) {
    if (!line.empty()) line += ' ';
    line += word;
  }
  return line;
}

std::string render(std::string_view pattern, const std::string& label, const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 2) == "{}") {
      out += label;
      i += 2;
    } else if (pattern.substr(i, 7) == "{lower}") {
      for (const char c : label) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      i += 7;
    } else if (pattern.substr(i, 6) == "{name}") {
      out += name;
      i += 6;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

void add_controller_labels(PodSpecView& pod, const WorkloadKind& kind, const PodTemplateLocation& location,
                           const std::string& label, const std::string& object_name) {
  // generateName objects have no name yet ("x-*"): their name-based labels are unknown.
  const bool named = !object_name.empty() && object_name.back() != '*';
  for (const auto* labels : {&kind.pod_labels, &location.pod_labels}) {
    for (const auto& [key, pattern] : *labels) {
      if (!named && pattern.find("{name}") != std::string::npos) continue;
      pod.labels.insert_or_assign(key, render(pattern, label, object_name));
    }
  }
}

// ControllerVolumes: what the kind's controller adds to every pod besides its template.
struct ControllerVolumes {
  // PVC templates by name: a volume of that name becomes a persistentVolumeClaim (the
  // StatefulSet, LeaderWorkerSet and JobSet controllers attach one where the template
  // mounts the name).
  std::set<std::string> claims;
  // Job-level volumes (Volcano): a PVC volume and a mount in every container.
  std::vector<VolumeMount> mounts;
};

ControllerVolumes controller_volumes(JsonReader& reader, const Value& object, const JsonPath& path,
                                     const WorkloadKind& kind) {
  ControllerVolumes out;
  for (const auto& claims_path : kind.claim_templates) {
    walk_template_path(
        reader, object, path, claims_path, [&](const Value& claim, const JsonPath& at, const std::string&) {
          if (reader.object(&claim, at) == nullptr) return;
          const JsonPath meta_path{&at, "metadata"};
          const Value* meta = reader.object(JsonReader::member(&claim, "metadata"), meta_path);
          std::string name = reader.string(JsonReader::member(meta, "name"), JsonPath{&meta_path, "name"});
          if (!name.empty()) out.claims.insert(std::move(name));
        });
  }
  for (const auto& volumes_path : kind.job_volumes) {
    walk_template_path(
        reader, object, path, volumes_path, [&](const Value& volume, const JsonPath& at, const std::string&) {
          if (reader.object(&volume, at) == nullptr) return;
          std::string mount_path = reader.string(JsonReader::member(&volume, "mountPath"), JsonPath{&at, "mountPath"});
          if (mount_path.empty()) return;
          // The controller names the pod volume itself; any unique name serves here.
          out.mounts.push_back({"job-volume-" + std::to_string(out.mounts.size()), std::move(mount_path), false});
        });
  }
  return out;
}

void add_controller_volumes(PodSpecView& pod, const ControllerVolumes& added) {
  if (!added.claims.empty()) {
    // One pass, not one per claim: thousands of claims must not cost n^2.
    std::erase_if(pod.volumes, [&](const Volume& v) { return added.claims.contains(v.name); });
    for (const auto& name : added.claims) pod.volumes.push_back(Volume{name, "persistentVolumeClaim", "", false});
  }
  for (const auto& mount : added.mounts) {
    pod.volumes.push_back(Volume{mount.name, "persistentVolumeClaim", "", false});
    for (auto& container : pod.containers) container.volume_mounts.push_back(mount);
  }
}

}  // namespace

// coordinator: whether the part labelled `label` coordinates its job (PartRole).
bool coordinator(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                 const std::string& label) {
  for (const auto& role : kind.roles) {
    if (role.checkpoint_writer || role.helper || lower(role.part_label) != lower(label)) continue;
    if (role.writer_when.empty()) return true;
    bool writer = false;
    walk_template_path(
        reader, object, path, role.writer_when,
        [&](const Value& v, const JsonPath&, const std::string&) { writer = writer || (v.IsBool() && v.GetBool()); });
    return !writer;
  }
  return false;
}

// checkpoint_writer: whether the part labelled `label` writes its job's checkpoints.
bool checkpoint_writer(const WorkloadKind& kind, const std::string& label) {
  return std::any_of(kind.roles.begin(), kind.roles.end(), [&](const PartRole& role) {
    return role.checkpoint_writer && lower(role.part_label) == lower(label);
  });
}

// helper: whether the part labelled `label` prepares its job (role: helper).
bool helper(const WorkloadKind& kind, const std::string& label) {
  return std::any_of(kind.roles.begin(), kind.roles.end(),
                     [&](const PartRole& role) { return role.helper && lower(role.part_label) == lower(label); });
}

namespace {

// kMaxWrapDepth: wrappers inside wrappers (an AppWrapper of a Katib Experiment) are
// followed this deep; real manifests nest once.
constexpr int kMaxWrapDepth = 3;

// locate_one_wrapped: the object `inner` a wrapper holds at `at`, located by the row of its
// own kind; its parts join the wrapper's, named "<part>: <its part>".
void locate_one_wrapped(JsonReader& reader, const Value& inner, const JsonPath& at, const std::string& label,
                        const PodTemplateLocation& location, WorkloadView& out, const Policy& policy, int depth,
                        const ClusterSnapshot* known) {
  if (!inner.IsObject()) return reader.fail(at, "expected an object (a wrapped Kubernetes object)");
  std::string api_version = JsonReader::string_member(&inner, "apiVersion");
  std::string inner_kind = JsonReader::string_member(&inner, "kind");
  const std::string prefix = render(location.part, label, out.name);
  // KubeDL's CronTemplateSpec keeps the kind inline and the object in `workload`.
  const Value* body = &inner;
  const JsonPath workload_path{&at, "workload"};
  const Value* workload = JsonReader::member(&inner, "workload");
  const bool inline_kind = workload != nullptr && workload->IsObject() && !inner.HasMember("spec");
  if (inline_kind) {
    body = workload;
    // Written inside the workload instead (the controller wants it beside): still its kind.
    if (inner_kind.empty()) {
      api_version = JsonReader::string_member(workload, "apiVersion");
      inner_kind = JsonReader::string_member(workload, "kind");
      if (!inner_kind.empty()) {
        reader.note(prefix + ": kind " + inner_kind +
                    " is written inside `workload`, where KubeDL's controller does not read it (it reads " +
                    location.path + ".apiVersion and .kind): judged as " + inner_kind);
      }
    }
  }
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const WorkloadKind* row = policy.workload_kind(group, inner_kind);
  // A wrapped kind with no row is judged by its pod templates, as `check` judges one.
  std::optional<WorkloadKind> discovered;
  if (row == nullptr && !inner_kind.empty() && policy.discovers(group, inner_kind) && body->IsObject()) {
    discovered = discover_kind(*body, group, inner_kind);
    if (discovered) {
      row = &*discovered;
      reader.note(prefix + ": " + discovery_note(*discovered));
    }
  }
  // A TrainJob trial (Katib over Trainer v2) is judged as the JobSet its runtime makes.
  std::optional<TrainJobBuild> built;
  if (row != nullptr && !row->resolve.empty() && depth < kMaxWrapDepth) {
    built = build_trainjob(*body, out.namespace_name, known, "no cluster view");
    reader.note(prefix + ": " + built->note);
    if (!built->missing.empty() || !built->resolution.error.empty()) return;
  }
  if (row == nullptr || depth >= kMaxWrapDepth) {
    reader.note(prefix + ": " + (inner_kind.empty() ? std::string("an object without a kind") : inner_kind) +
                (row == nullptr ? " is not in the workload table" : " is not evaluated inside a wrapper"));
    return;
  }
  WorkloadView wrapped;
  wrapped.name = JsonReader::string_member(JsonReader::member(body, "metadata"), "name");
  const std::size_t notes = reader.notes().size();  // the wrapped object's notes are named for it
  if (built) {
    locate_pod_templates(reader, built->resolution.object, at, *row, wrapped, &policy, depth + 1, known);
  } else {
    locate_pod_templates(reader, *body, inline_kind ? workload_path : at, *row, wrapped, &policy, depth + 1, known);
  }
  reader.prefix_notes(notes, prefix + ": ");
  for (auto& pod : wrapped.pods) {
    pod.part = prefix + (pod.part.empty() ? "" : ": " + pod.part);
    if (pod.wrapped_kind.empty()) {
      pod.wrapped_group = group;
      pod.wrapped_kind = inner_kind;
    }
    pod.without_accelerator = pod.without_accelerator || location.without_accelerator;
    out.pods.push_back(std::move(pod));
  }
  out.entrypoints.insert(out.entrypoints.end(), wrapped.entrypoints.begin(), wrapped.entrypoints.end());
}

// wrapped_text: the text a text location holds: the string itself, or with `config_map`
// the entry of the ConfigMap it refers to. Empty, with a note, when it cannot be had.
std::string wrapped_text(JsonReader& reader, const Value& value, const JsonPath& at, const std::string& prefix,
                         const PodTemplateLocation& location, const ClusterSnapshot* known) {
  if (!location.config_map) return reader.string(&value, at);
  if (reader.object(&value, at) == nullptr) return {};
  const std::string name = JsonReader::string_member(&value, "configMapName");
  const std::string namespace_name = JsonReader::string_member(&value, "configMapNamespace");
  const std::string key = JsonReader::string_member(&value, "templatePath");
  // Katib reads the namespace as given (its v1beta1 validator refuses an empty one): no guess.
  if (name.empty() || namespace_name.empty() || key.empty()) {
    reader.note(prefix + ": not evaluated: its template's ConfigMap reference names no " +
                (name.empty()             ? "configMapName"
                 : namespace_name.empty() ? "configMapNamespace"
                                          : "templatePath"));
    return {};
  }
  const StringMap* data = known != nullptr ? known->config_map(namespace_name, name) : nullptr;
  const auto entry = data != nullptr ? data->find(key) : StringMap::const_iterator();
  if (data == nullptr || entry == data->end()) {
    reader.note(prefix + ": not evaluated: its template is entry " + key + " of ConfigMap " + namespace_name + "/" +
                name + ", which is not in view");
    return {};
  }
  if (entry->second.empty()) reader.note(prefix + ": not evaluated: its template, entry " + key + ", is empty");
  return entry->second;
}

// locate_text_object: an object read from text. Its shape errors are its own (a
// `${template}` where a list belongs): the trial is not evaluated, and the wrapper and its
// other parts still are.
void locate_text_object(JsonReader& reader, const Value& object, const JsonPath& at, const std::string& label,
                        const PodTemplateLocation& location, WorkloadView& out, const Policy& policy, int depth,
                        const ClusterSnapshot* known) {
  JsonReader own;
  WorkloadView staged;
  staged.name = out.name;
  staged.namespace_name = out.namespace_name;
  locate_one_wrapped(own, object, at, label, location, staged, policy, depth, known);
  const std::string prefix = render(location.part, label, out.name);
  if (!own.ok())
    return reader.note(prefix + ": not evaluated: its template text does not read as its kind (" + own.error() + ")");
  for (const auto& n : own.notes()) reader.note(n);
  if (const std::string dropped = own.dropped_note(); !dropped.empty()) reader.note(prefix + ": " + dropped);
  for (auto& pod : staged.pods) out.pods.push_back(std::move(pod));
  out.entrypoints.insert(out.entrypoints.end(), staged.entrypoints.begin(), staged.entrypoints.end());
}

// locate_wrapped: the objects a wrapper kind holds (WorkloadKind::wraps), whether kept as
// objects or as text (Katib's Go templates, ConfigMap entries).
void locate_wrapped(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                    WorkloadView& out, const Policy& policy, int depth, const ClusterSnapshot* known) {
  for (const auto& location : kind.wraps) {
    walk_template_path(
        reader, object, path, location.path, [&](const Value& inner, const JsonPath& at, const std::string& label) {
          if (location.text.empty() && !location.config_map) {
            return locate_one_wrapped(reader, inner, at, label, location, out, policy, depth, known);
          }
          const std::string prefix = render(location.part, label, out.name);
          const std::string text = wrapped_text(reader, inner, at, prefix, location, known);
          if (text.empty()) return;
          if (!reader.draw_text(text.size(), kMaxWrappedTextBytes)) {
            return reader.note(prefix + ": not evaluated: its template text (" + std::to_string(text.size()) +
                               " bytes) is past the " + std::to_string(kMaxWrappedTextBytes) +
                               " bytes of text read for one object");
          }
          const WrappedText parsed =
              parse_wrapped_text(text, location.text == "goTemplate" ? TextSyntax::kGoTemplate : TextSyntax::kYaml);
          if (!parsed.error.empty()) {
            return reader.note(prefix + ": not evaluated: its template text cannot be read (" + parsed.error + ")");
          }
          locate_text_object(reader, parsed.document, at, label, location, out, policy, depth, known);
        });
  }
}

// kind_name: "MXJob (kubeflow.org)".
std::string kind_name(const WorkloadKind& kind) {
  return kind.kind + (kind.group.empty() ? "" : " (" + kind.group + ")");
}

}  // namespace

namespace {

// locate_templates: the pod templates at the row's template paths.
void locate_templates(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                      WorkloadView& out) {
  const ControllerVolumes added = controller_volumes(reader, object, path, kind);
  for (const auto& entrypoint : kind.entrypoints) {
    walk_template_path(reader, object, path, entrypoint, [&](const Value& v, const JsonPath& at, const std::string&) {
      std::string command = v.IsArray() ? command_line(reader, v, at, entrypoint) : reader.string(&v, at);
      if (!command.empty()) out.entrypoints.push_back(std::move(command));
    });
  }
  const RestartRow& restart = kind.restart;
  const RestartKnobs object_knobs =
      restart.model.empty() ? RestartKnobs{} : decode_object_restart(reader, object, path, restart);
  for (const auto& location : kind.templates) {
    // A part's own restart knobs live beside its template (a child Job, a replica, a task).
    std::map<std::string, RestartKnobs, std::less<>> part_knobs;
    const auto holder =
        restart.model.empty() || restart.model == "job" ? std::nullopt : template_holder_path(location.path);
    if (holder) {
      walk_template_path(reader, object, path, *holder,
                         [&](const Value& value, const JsonPath& at, const std::string&) {
                           RestartKnobs knobs = object_knobs;
                           decode_part_restart(reader, value, at, restart, knobs);
                           part_knobs.insert_or_assign(at.render(), std::move(knobs));
                         });
    }
    walk_template_path(
        reader, object, path, location.path, [&](const Value& value, const JsonPath& at, const std::string& label) {
          PodSpecView pod = decode_pod_template(reader, value, at);
          const auto knobs = at.parent != nullptr && holder ? part_knobs.find(at.parent->render()) : part_knobs.end();
          pod.restart = knobs != part_knobs.end() ? knobs->second : object_knobs;
          add_controller_volumes(pod, added);
          pod.part = render(location.part, label, out.name);
          // A template without a label (a RayCluster's head) is named by its part.
          pod.coordinator = coordinator(reader, object, path, kind, label.empty() ? pod.part : label);
          pod.checkpoint_writer = checkpoint_writer(kind, label.empty() ? pod.part : label);
          pod.helper = helper(kind, label.empty() ? pod.part : label);
          add_controller_labels(pod, kind, location, label, out.name);
          out.pods.push_back(std::move(pod));
        });
  }
}

// locate_elsewhere: a listed kind with no pod template where its row looks. Another version
// of a training kind keeps them elsewhere (Kubeflow's MXJob v1alpha1 has a list
// `replicaSpecs`, not a map `mxReplicaSpecs`): with policy judgeUnlistedKinds they are found
// by their shape, as a kind without a row is, and judged with the row's class. Otherwise the
// report says that nothing of the object was read, rather than passing it in silence.
void locate_elsewhere(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                      WorkloadView& out, const Policy* policy) {
  std::string looked;
  for (const auto* locations : {&kind.templates, &kind.wraps}) {
    for (const auto& l : *locations) looked += (looked.empty() ? "" : ", ") + (l.path.empty() ? "." : l.path);
  }
  if (looked.empty()) return;
  const std::string said = "kind " + kind_name(kind) + ": no pod template at " + looked + ", where its row looks";
  // Only a training kind's: other kinds may have none on purpose (a RayJob that runs on an
  // existing cluster, clusterSelector, keeps only its submitter's template). A wrapper's
  // own spec holds its wrapped object's templates: those are that kind's to judge.
  std::optional<WorkloadKind> found;
  if (policy != nullptr && policy->judge_unlisted_kinds && kind.wraps.empty() &&
      kind.workload_class == WorkloadClass::kTraining) {
    found = discover_kind(object, kind.group, kind.kind);
  }
  if (!found) return reader.note(said + ": nothing in it was evaluated");
  WorkloadKind row = kind;
  row.templates = std::move(found->templates);
  row.entrypoints.insert(row.entrypoints.end(), found->entrypoints.begin(), found->entrypoints.end());
  std::string paths;
  for (const auto& t : row.templates) paths += (paths.empty() ? "" : ", ") + t.path;
  const std::size_t pods = out.pods.size();
  locate_templates(reader, object, path, row, out);
  if (out.pods.size() == pods) return reader.note(said + ": nothing in it was evaluated");
  reader.note(said + " (another version of the kind?): judged at the pod templates found at " + paths +
              " (policy judgeUnlistedKinds)");
}

}  // namespace

void locate_pod_templates(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                          WorkloadView& out, const Policy* policy, int depth, const ClusterSnapshot* known) {
  const std::size_t pods = out.pods.size();
  const std::size_t notes = reader.noted();  // a wrapper may have said why it found none
  if (policy != nullptr) locate_wrapped(reader, object, path, kind, out, *policy, depth, known);
  locate_templates(reader, object, path, kind, out);
  if (out.pods.size() == pods && reader.noted() == notes && reader.ok()) {
    locate_elsewhere(reader, object, path, kind, out, policy);
  }
}

}  // namespace kubegap
