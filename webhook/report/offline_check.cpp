#include "webhook/report/offline_check.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "policies/checks.h"
#include "policies/text.h"
#include "webhook/core/build_info.h"
#include "webhook/core/case_library.h"
#include "webhook/core/file_io.h"
#include "webhook/core/json_reader.h"
#include "webhook/core/object_decoder.h"
#include "webhook/core/object_evaluation.h"
#include "webhook/core/object_loader.h"
#include "webhook/core/template_discovery.h"
#include "webhook/core/trainjob_resolver.h"

namespace kubegap {
namespace {

namespace fs = std::filesystem;

std::string string_of(const rapidjson::Value& object, std::string_view member) {
  const rapidjson::Value* v = JsonReader::member(&object, member);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

std::string meta_of(const rapidjson::Value& object, std::string_view member) {
  const rapidjson::Value* meta = JsonReader::member(&object, "metadata");
  return meta != nullptr && meta->IsObject() ? string_of(*meta, member) : std::string();
}

// group_of: "batch/v1" -> "batch", "v1" -> "" (the core group).
std::string group_of(const std::string& api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

// is_kustomize_or_helm_file: files of kustomize and Helm that are YAML but not Kubernetes
// objects (they have no apiVersion/kind): the kustomization, a chart's Chart.yaml and
// its values files.
bool is_kustomize_or_helm_file(const fs::path& file) {
  const std::string name = file.filename().string();
  return name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization" ||
         name == "Chart.yaml" || name == "values.yaml" || name == "values.yml" ||
         (name.starts_with("values-") && (name.ends_with(".yaml") || name.ends_with(".yml")));
}

// in_helm_templates: `file` is under the templates/ directory of a Helm chart (a
// directory holding a Chart.yaml).
bool in_helm_templates(const fs::path& file) {
  for (fs::path dir = file.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path()) {
    std::error_code ec;
    if (dir.filename() == "templates" && fs::exists(dir.parent_path() / "Chart.yaml", ec)) return true;
  }
  return false;
}

// InputReader: the objects of every PATH, and every problem met while reading them; a
// problem never stops the reading.
class InputReader {
 public:
  LoadedObjects loaded;
  std::vector<std::string> notes;
  std::vector<std::string> files;  // every file and PATH in reading order

  CheckSource source;  // "-" and which files may be read (the MCP server's)

  void read_path(const std::string& path) {
    if (path == "-" && source.stdin_text != nullptr) return read_text(*source.stdin_text, "<stdin>");
    if (path == "-") {
      std::ostringstream text;
      text << std::cin.rdbuf();
      return read_text(text.str(), "<stdin>");
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) return read_directory(path);
    if (!fs::exists(path, ec)) return problem(path, "no such file or directory");
    read_file_path(path);
  }

 private:
  void problem(const std::string& file, std::string message) {
    files.push_back(file);
    loaded.problems.push_back({file, 0, std::move(message)});
  }

  void read_directory(const std::string& path) {
    std::error_code ec;
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      const auto ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
        found.push_back(it->path().string());
      }
    }
    // Read what was found before the error: the report keeps every readable file.
    if (ec) problem(path, "cannot read directory: " + ec.message());
    std::sort(found.begin(), found.end());
    if (found.empty() && !ec) notes.push_back(path + ": no *.yaml, *.yml or *.json files");
    for (const auto& file : found) read_file_path(file);
  }

  void read_file_path(const std::string& file) {
    if (source.readable && !source.readable(file)) {
      return problem(file, "not read: outside the directories this server may read (a symbolic link leaving them?)");
    }
    std::string text;
    try {
      text = read_file(file);
    } catch (const ConfigError& e) {  // "FILE: cannot open file": keep the reason only
      const std::string_view what = e.what();
      return problem(file, std::string(what.starts_with(file + ": ") ? what.substr(file.size() + 2) : what));
    }
    // An unrendered template is not YAML yet ("{{ ... }}"): render it, then check it.
    if (in_helm_templates(file) && text.find("{{") != std::string::npos) {
      return notes.push_back(file + ": skipped: a Helm chart template (check the output of helm template)");
    }
    read_text(text, file);
  }

 public:  // check_text reads one text directly
  void read_text(const std::string& text, const std::string& file) {
    files.push_back(file);
    const std::size_t objects_before = loaded.objects.size();
    const std::size_t problems_before = loaded.problems.size();
    load_objects(text, file, loaded);
    if (is_kustomize_or_helm_file(file) && skip_headerless_objects(objects_before)) {
      return notes.push_back(file + ": skipped: a kustomize or Helm file without apiVersion and kind");
    }
    if (loaded.objects.size() == objects_before && loaded.problems.size() == problems_before) {
      notes.push_back(file + ": no Kubernetes objects");
    }
  }

 private:
  // skip_headerless_objects: drops the objects read since `first` that have no
  // apiVersion or kind; whether there were any.
  bool skip_headerless_objects(std::size_t first) {
    const auto headerless = [](const KubeObject& o) { return o.api_version.empty() || o.kind.empty(); };
    const auto begin = loaded.objects.begin() + static_cast<std::ptrdiff_t>(first);
    const auto removed = std::remove_if(begin, loaded.objects.end(), headerless);
    const bool any = removed != loaded.objects.end();
    loaded.objects.erase(removed, loaded.objects.end());
    return any;
  }
};

// order_by_file: problems by the order their files were read in, then by line.
// view_kind: an object that is part of the cluster view `check` builds, not skipped.
bool view_kind(const KubeObject& input) {
  return input.kind == "PodDisruptionBudget" || input.kind == "Node" ||
         is_resource_claim(input.api_version, input.kind);
}

// row_for: the table's row for the object's kind; for a kind with no row, one made
// from the pod templates it holds (kept in `discovered`), said in `notes`.
const WorkloadKind* row_for(const KubeObject& input, const Policy& policy, std::optional<WorkloadKind>& discovered,
                            std::vector<std::string>& notes) {
  const std::string group = group_of(input.api_version);
  if (const WorkloadKind* row = policy.workload_kind(group, input.kind)) return row;
  if (!policy.discovers(group, input.kind) || !input.json->IsObject()) return nullptr;
  discovered = discover_kind(*input.json, group, input.kind);
  if (!discovered) return nullptr;
  notes.push_back(discovery_note(*discovered));
  return &*discovered;
}

void order_by_file(std::vector<InputProblem>& problems, const std::vector<std::string>& files) {
  std::unordered_map<std::string_view, std::size_t> rank;
  for (const auto& file : files) rank.emplace(file, rank.size());
  std::stable_sort(problems.begin(), problems.end(), [&](const InputProblem& a, const InputProblem& b) {
    const std::size_t ra = rank.count(a.file) ? rank.at(a.file) : rank.size();
    const std::size_t rb = rank.count(b.file) ? rank.at(b.file) : rank.size();
    return ra != rb ? ra < rb : a.line < b.line;
  });
}

}  // namespace

std::size_t CheckReport::finding_count() const {
  std::size_t count = 0;
  for (const auto& o : objects) {
    count += static_cast<std::size_t>(
        std::count_if(o.findings.begin(), o.findings.end(), [](const Finding& f) { return warns(f); }));
  }
  return count;
}

namespace {

// check_read: the report on what `reader` read from `path_count` paths.
CheckReport check_read(InputReader& reader, std::size_t path_count, const Policy& policy) {
  CheckReport report;
  report.notes = std::move(reader.notes);
  report.errors = std::move(reader.loaded.problems);
  // object_error: `error` of a decoder, at the line of the field it names.
  const auto object_error = [&](const KubeObject& input, const std::string& error) {
    report.errors.push_back({input.file, input.field_line(error, input.kind), error});
  };
  std::vector<const KubeObject*> inputs;
  for (const auto& input : reader.loaded.objects) {
    if (input.api_version.empty() || input.kind.empty()) {
      report.errors.push_back({input.file, input.line, "not a Kubernetes object: apiVersion and kind are required"});
    } else {
      inputs.push_back(&input);
    }
  }
  if (reader.loaded.objects.empty() && report.errors.empty()) {
    report.errors.push_back({"", 0,
                             "no Kubernetes objects found in " + std::to_string(path_count) + " path(s)" +
                                 (report.notes.empty() ? "" : ": " + report.notes.front())});
  }

  // The cluster view: the PodDisruptionBudgets and Nodes that travel with the workloads.
  std::vector<DisruptionBudget> budgets;
  std::vector<NodeInfo> nodes;
  std::vector<ResourceClaimInfo> claims;
  std::vector<ConfigMapInfo> config_maps;
  std::vector<TrainingRuntimeInfo> runtimes;
  for (const KubeObject* input : inputs) {
    JsonReader json_reader;
    const JsonPath root{nullptr, input->kind};
    if (input->kind == "PodDisruptionBudget") {
      DisruptionBudget budget = decode_disruption_budget(json_reader, *input->json, root);
      if (json_reader.ok()) budgets.push_back(std::move(budget));
    } else if (input->kind == "Node") {
      NodeInfo node = decode_node(json_reader, *input->json, root);
      if (json_reader.ok()) nodes.push_back(std::move(node));
    } else if (is_resource_claim(input->api_version, input->kind)) {
      ResourceClaimInfo claim = decode_resource_claim(json_reader, *input->json, root);
      if (json_reader.ok()) claims.push_back(std::move(claim));
    } else if (group_of(input->api_version) == kTrainerApiGroup &&
               (input->kind == kClusterTrainingRuntimeKind || input->kind == kTrainingRuntimeKind)) {
      // A TrainJob in the input is judged with the runtime it names (it is judged as a
      // workload of its own too, below).
      WorkloadView meta;
      decode_object_meta(json_reader, *input->json, root, meta);
      rapidjson::StringBuffer text;
      rapidjson::Writer<rapidjson::StringBuffer> writer(text);
      input->json->Accept(writer);
      runtimes.push_back({input->kind, meta.namespace_name.empty() ? "default" : meta.namespace_name, meta.name,
                          std::string(text.GetString(), text.GetSize())});
    } else if (input->kind == "ConfigMap" && input->api_version == "v1") {
      // Env vars that containers take from it (envFrom): where checkpoints go.
      WorkloadView meta;
      decode_object_meta(json_reader, *input->json, root, meta);
      StringMap data;
      json_reader.string_map(JsonReader::member(input->json, "data"), JsonPath{&root, "data"}, data);
      if (json_reader.ok()) {
        config_maps.push_back(
            {meta.namespace_name.empty() ? "default" : meta.namespace_name, meta.name, std::move(data)});
      }
    }
    if (!json_reader.ok()) object_error(*input, json_reader.error());
  }
  report.budgets = budgets.size();
  report.nodes = nodes.size();
  const bool have_view = !budgets.empty() || !nodes.empty();
  // The DRA claims in the input resolve the device classes of pods that use them; a
  // snapshot of claims alone is no cluster view for disruption-budget (handled below).
  // The input is all `check` knows: a runtime not in it is not found (listed), unless it
  // is one Trainer ships, which most TrainJobs name without carrying it.
  const ClusterSnapshot snapshot(std::move(budgets), std::move(nodes), std::move(claims), std::move(config_maps),
                                 std::make_shared<const RuntimeSet>(std::move(runtimes), true, true));

  for (const KubeObject* input : inputs) {
    std::optional<WorkloadKind> discovered;
    std::vector<std::string> notes;
    const WorkloadKind* row = row_for(*input, policy, discovered, notes);
    if (row == nullptr) {
      if (!view_kind(*input)) {
        report.skipped.push_back(
            {input->file, input->line, input->api_version, input->kind, meta_of(*input->json, "name")});
      }
      continue;
    }
    ObjectEvaluation evaluation =
        evaluate_object(*input->json, input->kind, *row, "default", have_view ? &snapshot : nullptr, policy,
                        "no PodDisruptionBudgets or Nodes in the input", &snapshot, std::move(notes));
    if (!evaluation.error.empty()) {  // this object only: the others are still evaluated
      object_error(*input, evaluation.error);
      continue;
    }
    report.objects.push_back({input->file, input->line, input->api_version, input->kind,
                              evaluation.object.namespace_name, evaluation.object.name, std::move(evaluation.findings),
                              std::move(evaluation.parts), meta_of(*input->json, "uid"),
                              std::move(evaluation.provenance)});
  }
  order_by_file(report.errors, reader.files);
  return report;
}

}  // namespace

CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy) {
  return check_paths(paths, policy, CheckSource{});
}

CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy, const CheckSource& source) {
  InputReader reader;
  reader.source = source;
  for (const auto& path : paths) reader.read_path(path);
  return check_read(reader, paths.size(), policy);
}

CheckReport check_text(const std::string& text, const std::string& file, const Policy& policy) {
  InputReader reader;
  reader.read_text(text, file);
  return check_read(reader, 1, policy);
}

}  // namespace kubegap
