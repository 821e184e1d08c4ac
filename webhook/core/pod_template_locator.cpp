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

// locate_wrapped: the objects a wrapper kind holds (WorkloadKind::wraps), each located by
// the row of its own kind; their parts join the wrapper's, named "<part>: <its part>".
void locate_wrapped(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                    WorkloadView& out, const Policy& policy, int depth, const ClusterSnapshot* known) {
  for (const auto& location : kind.wraps) {
    walk_template_path(
        reader, object, path, location.path, [&](const Value& inner, const JsonPath& at, const std::string& label) {
          if (!inner.IsObject()) return reader.fail(at, "expected an object (a wrapped Kubernetes object)");
          const std::string api_version = JsonReader::string_member(&inner, "apiVersion");
          const std::string inner_kind = JsonReader::string_member(&inner, "kind");
          // KubeDL's CronTemplateSpec keeps the kind inline and the object in `workload`.
          const Value* body = &inner;
          const JsonPath workload_path{&at, "workload"};
          const Value* workload = JsonReader::member(&inner, "workload");
          const bool inline_kind = workload != nullptr && workload->IsObject() && !inner.HasMember("spec");
          if (inline_kind) body = workload;
          const auto slash = api_version.find('/');
          const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
          const std::string prefix = render(location.part, label, out.name);
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
          if (built) {
            locate_pod_templates(reader, built->resolution.object, at, *row, wrapped, &policy, depth + 1, known);
          } else {
            locate_pod_templates(reader, *body, inline_kind ? workload_path : at, *row, wrapped, &policy, depth + 1,
                                 known);
          }
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
        });
  }
}

}  // namespace

void locate_pod_templates(JsonReader& reader, const Value& object, const JsonPath& path, const WorkloadKind& kind,
                          WorkloadView& out, const Policy* policy, int depth, const ClusterSnapshot* known) {
  if (policy != nullptr) locate_wrapped(reader, object, path, kind, out, *policy, depth, known);
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

}  // namespace kubegap
