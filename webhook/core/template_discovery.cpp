#include "webhook/core/template_discovery.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <vector>

#include "webhook/core/json_reader.h"

namespace kubegap {
namespace {

using rapidjson::Value;

// A member name the template path grammar can spell ([A-Za-z0-9_-]+); others are not
// followed (no real pod template sits under such a name).
bool path_field(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// A PodTemplateSpec: `spec.containers` is a list of objects (a pod cannot have none).
bool pod_template(const Value& value) {
  const Value* spec = JsonReader::member(&value, "spec");
  if (spec == nullptr || !spec->IsObject()) return false;
  const Value* containers = JsonReader::member(spec, "containers");
  return containers != nullptr && containers->IsArray() && !containers->Empty() && (*containers)[0].IsObject();
}

// kLabelKeys: the members that name each element of a list of pod templates: `name`
// (Volcano-like task lists), or the replica type of Kubeflow's v1alpha1 operators, which
// keep a list of replicas (`tfReplicaType: MASTER`; tf-operator, pytorch-operator and
// mxnet-operator v1alpha1 types). A fixed list: each is looked up once per element.
constexpr std::array<std::string_view, 5> kLabelKeys = {"name", "tfReplicaType", "mxReplicaType", "pytorchReplicaType",
                                                        "replicaType"};

// label_key: the first of kLabelKeys that every element of `array` holds as a string, or
// empty: the elements are then labelled by their index.
std::string_view label_key(const Value& array) {
  for (const auto key : kLabelKeys) {
    const bool every = !array.Empty() && std::all_of(array.Begin(), array.End(), [&](const Value& e) {
      const Value* v = JsonReader::member(&e, key);
      return v != nullptr && v->IsString();
    });
    if (every) return key;
  }
  return {};
}

std::string array_segment(std::string_view field, const Value& array) {
  return std::string(field) + "[" + std::string(label_key(array)) + "]";
}

// command_list: a non-empty list of strings named like a command (`cmd`, `command`,
// `args`, `run`, `entrypoint`) or like the program that runs it (`python`, `torchrun`):
// TensorStack's `spec.worker.cmd` and `spec.config.run.python` hold the whole job's
// command outside its pod templates, whose containers then run the image's entrypoint.
constexpr std::array<std::string_view, 6> kCommandNames = {"cmd", "command", "args", "run", "entrypoint", "script"};
constexpr std::array<std::string_view, 6> kProgramNames = {"python", "python3", "torchrun", "deepspeed", "bash", "sh"};

bool command_list(std::string_view name, const Value& value) {
  const auto in = [&](const auto& names) { return std::find(names.begin(), names.end(), name) != names.end(); };
  return (in(kCommandNames) || in(kProgramNames)) && value.IsArray() && !value.Empty() &&
         std::all_of(value.Begin(), value.End(), [](const Value& e) { return e.IsString(); });
}

class Finder {
 public:
  std::vector<std::string> paths;
  std::vector<std::string> commands;  // command lists outside the pod templates

  void walk(const Value& value, const std::string& path, int depth) {
    if (!value.IsObject() || depth > kMaxDiscoveryDepth || ++visits_ > kMaxDiscoveryVisits) return;
    if (pod_template(value)) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
      return;
    }
    for (const auto& m : value.GetObject()) {
      const std::string_view name(m.name.GetString(), m.name.GetStringLength());
      if (!path_field(name)) continue;
      if (command_list(name, m.value)) {
        const std::string at = path + "." + std::string(name);
        if (std::find(commands.begin(), commands.end(), at) == commands.end()) commands.push_back(at);
      } else if (m.value.IsObject()) {
        walk(m.value, path + "." + std::string(name), depth + 1);
      } else if (m.value.IsArray()) {
        const std::string at = path + "." + array_segment(name, m.value);
        for (const auto& element : m.value.GetArray()) walk(element, at, depth + 1);
      }
    }
  }

 private:
  std::size_t visits_ = 0;
};

// The path's segments after `spec`, without a last `template`: what the part is called.
std::vector<std::string> part_segments(const std::string& path) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    out.push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  out.erase(out.begin());  // "spec"
  if (!out.empty() && out.back() == "template") out.pop_back();
  return out;
}

// "tasks[name]" -> "tasks", and `last` adds the label: "tasks {}".
std::string part_word(const std::string& segment, bool last) {
  const auto bracket = segment.find('[');
  if (bracket == std::string::npos) return segment;
  return segment.substr(0, bracket) + (last ? " {}" : "");
}

// Parts are named by their last segment ("spec.etReplicaSpecs.worker.template" ->
// "worker"), or by the whole path where two would share a name.
std::string part_name(const std::vector<std::string>& segments, bool whole) {
  if (segments.empty()) return {};
  std::string out;
  for (std::size_t i = whole ? 0 : segments.size() - 1; i < segments.size(); ++i) {
    if (!out.empty()) out += '.';
    out += part_word(segments[i], i + 1 == segments.size());
  }
  return out;
}

}  // namespace

std::string_view command_program(std::string_view path) {
  const auto dot = path.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? path : path.substr(dot + 1);
  return std::find(kProgramNames.begin(), kProgramNames.end(), last) != kProgramNames.end() ? last : std::string_view();
}

std::optional<WorkloadKind> discover_kind(const Value& object, const std::string& group, const std::string& kind) {
  const Value* spec = JsonReader::member(&object, "spec");
  if (spec == nullptr) return std::nullopt;
  Finder finder;
  finder.walk(*spec, "spec", 1);
  if (finder.paths.empty()) return std::nullopt;
  std::map<std::string, int> uses;
  for (const auto& path : finder.paths) ++uses[part_name(part_segments(path), false)];
  WorkloadKind row;
  row.group = group;
  row.kind = kind;
  row.workload_class = WorkloadClass::kAuto;
  row.templates.clear();
  for (const auto& path : finder.paths) {
    const auto segments = part_segments(path);
    const std::string part = part_name(segments, false);
    row.templates.push_back({path, part_name(segments, uses[part] > 1), {}});
  }
  row.entrypoints = std::move(finder.commands);
  return row;
}

std::string discovery_note(const WorkloadKind& row) {
  std::string paths;
  for (const auto& t : row.templates) paths += (paths.empty() ? "" : ", ") + t.path;
  std::string commands;
  for (const auto& c : row.entrypoints) commands += (commands.empty() ? "" : ", ") + c;
  return "kind " + row.kind + (row.group.empty() ? "" : " (" + row.group + ")") +
         " has no row in the workload table: judged like a Job at the pod templates found at " + paths +
         (commands.empty() ? "" : ", running the command at " + commands) + " (policy judgeUnlistedKinds)";
}

}  // namespace kubegap
