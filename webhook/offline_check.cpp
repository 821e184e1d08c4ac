#include "webhook/offline_check.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <yaml-cpp/yaml.h>

#include "policies/checks.h"
#include "policies/text.h"
#include "webhook/build_info.h"
#include "webhook/case_library.h"
#include "webhook/json_reader.h"
#include "webhook/object_decoder.h"
#include "webhook/review_handler.h"
#include "webhook/yaml_json.h"

namespace kubegap {
namespace {

namespace fs = std::filesystem;

// InputObject: one Kubernetes object from the input, with where it was found.
struct InputObject {
  std::string file;
  int line = 0;
  std::unique_ptr<rapidjson::Document> json;
};

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

std::string where(const std::string& file, int line) { return file + ":" + std::to_string(line); }

class InputReader {
 public:
  std::vector<InputObject> objects;
  std::vector<std::string> notes;

 private:
  std::size_t budget_ = 0;  // nodes the current file may still expand to

 public:

  void read_path(const std::string& path) {
    if (path == "-") {
      std::ostringstream text;
      text << std::cin.rdbuf();
      return read_text(text.str(), "<stdin>");
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        const auto ext = it->path().extension().string();
        if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
          files.push_back(it->path().string());
        }
      }
      if (ec) throw InputError(path + ": cannot read directory: " + ec.message());
      std::sort(files.begin(), files.end());
      if (files.empty()) notes.push_back(path + ": no *.yaml, *.yml or *.json files");
      for (const auto& file : files) read_file_path(file);
      return;
    }
    if (!fs::exists(path, ec)) throw InputError(path + ": no such file or directory");
    read_file_path(path);
  }

 private:
  void read_file_path(const std::string& file) {
    try {
      read_text(read_file(file), file);
    } catch (const ConfigError& e) {
      throw InputError(e.what());
    }
  }

  void read_text(const std::string& text, const std::string& file) {
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
      throw InputError(where(file, e.mark.line + 1) + ": invalid YAML: " + e.msg);
    }
    const std::size_t before = objects.size();
    budget_ = yaml_node_budget(text.size());
    for (const auto& document : documents) {
      if (!document || document.IsNull()) continue;
      try {
        add(document, file, 0);
      } catch (const YAML::Exception& e) {  // e.g. a scalar where a mapping was expected
        throw InputError(where(file, e.mark.line + 1) + ": " + e.msg);
      } catch (const ConfigError& e) {
        throw InputError(file + ": " + e.what());
      }
    }
    if (objects.size() == before) notes.push_back(file + ": no Kubernetes objects");
  }

  void add(const YAML::Node& node, const std::string& file, int depth) {
    const int line = node.Mark().line + 1;
    // Lists in Lists through aliases could recurse without end.
    if (depth > 8) throw InputError(where(file, line) + ": Lists nested too deeply");
    if (!node.IsMap()) throw InputError(where(file, line) + ": expected a Kubernetes object (a mapping)");
    const YAML::Node kind = node["kind"];
    const std::string kind_text = kind && kind.IsScalar() ? kind.Scalar() : "";
    const YAML::Node api_version = node["apiVersion"];
    if (kind_text.empty() || !api_version || !api_version.IsScalar() || api_version.Scalar().empty()) {
      throw InputError(where(file, line) + ": not a Kubernetes object: apiVersion and kind are required");
    }
    if (kind_text.size() >= 4 && kind_text.ends_with("List") && node["items"]) {
      const YAML::Node items = node["items"];
      if (!items.IsSequence()) throw InputError(where(file, line) + ": " + kind_text + ".items is not a list");
      for (const auto& item : items) add(item, file, depth + 1);
      return;
    }
    if (kind_text == "AdmissionReview") {
      const YAML::Node request = node["request"];
      const YAML::Node object = request && request.IsMap() ? request["object"] : YAML::Node();
      if (!object || !object.IsMap()) throw InputError(where(file, line) + ": AdmissionReview without request.object");
      return add(object, file, depth + 1);
    }
    InputObject out{file, line, std::make_unique<rapidjson::Document>()};
    rapidjson::Value value = yaml_to_json(node, out.json->GetAllocator(), budget_);
    static_cast<rapidjson::Value&>(*out.json).Swap(value);
    objects.push_back(std::move(out));
  }
};

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kFinding: return "finding";
    case Outcome::kExempt: return "exempt";
    case Outcome::kNotEvaluated: return "not-evaluated";
  }
  return "finding";
}

std::string first_source(const std::string& case_id) {
  const Case* c = case_library().find(case_id);
  return c != nullptr && !c->sources.empty() ? c->sources.front().url : std::string();
}

std::string object_title(const CheckedObject& o) {
  const std::string ns = o.namespace_name.empty() ? "" : o.namespace_name + "/";
  return o.kind + " " + ns + (o.name.empty() ? "(unnamed)" : o.name);
}

template <typename Writer>
void write(Writer& w, std::string_view text) {
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

// write_origin: where an object came from and its type (checked or skipped alike).
template <typename Writer, typename Object>
void write_origin(Writer& w, const Object& o) {
  w.Key("file"); write(w, o.file);
  w.Key("line"); w.Int(o.line);
  w.Key("apiVersion"); write(w, o.api_version);
  w.Key("kind"); write(w, o.kind);
}

}  // namespace

std::size_t CheckReport::finding_count() const {
  std::size_t count = 0;
  for (const auto& o : objects) {
    count += static_cast<std::size_t>(std::count_if(o.findings.begin(), o.findings.end(),
                                                    [](const Finding& f) { return f.outcome == Outcome::kFinding; }));
  }
  return count;
}

CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy) {
  InputReader reader;
  for (const auto& path : paths) reader.read_path(path);
  if (reader.objects.empty()) {
    throw InputError("no Kubernetes objects found in " + std::to_string(paths.size()) + " path(s)" +
                     (reader.notes.empty() ? "" : ": " + reader.notes.front()));
  }

  CheckReport report;
  report.notes = std::move(reader.notes);
  // The cluster view: the PodDisruptionBudgets and Nodes that travel with the workloads.
  std::vector<DisruptionBudget> budgets;
  std::vector<NodeInfo> nodes;
  for (const auto& input : reader.objects) {
    const std::string kind = string_of(*input.json, "kind");
    JsonReader json_reader;
    const JsonPath root{nullptr, kind};
    if (kind == "PodDisruptionBudget") budgets.push_back(decode_disruption_budget(json_reader, *input.json, root));
    if (kind == "Node") nodes.push_back(decode_node(json_reader, *input.json, root));
    if (!json_reader.ok()) throw InputError(where(input.file, input.line) + ": " + json_reader.error());
  }
  report.budgets = budgets.size();
  report.nodes = nodes.size();
  const bool have_view = !budgets.empty() || !nodes.empty();
  const ClusterSnapshot snapshot(std::move(budgets), std::move(nodes));

  for (const auto& input : reader.objects) {
    const std::string api_version = string_of(*input.json, "apiVersion");
    const std::string kind = string_of(*input.json, "kind");
    const WorkloadKind* row = policy.workload_kind(group_of(api_version), kind);
    if (row == nullptr) {
      if (kind != "PodDisruptionBudget" && kind != "Node") {
        report.skipped.push_back({input.file, input.line, api_version, kind, meta_of(*input.json, "name")});
      }
      continue;
    }
    ObjectEvaluation evaluation = evaluate_object(*input.json, kind, *row, "default", have_view ? &snapshot : nullptr,
                                                  policy, "no PodDisruptionBudgets or Nodes in the input");
    if (!evaluation.error.empty()) throw InputError(where(input.file, input.line) + ": " + evaluation.error);
    report.objects.push_back({input.file, input.line, api_version, kind, evaluation.object.namespace_name,
                              evaluation.object.name, std::move(evaluation.findings)});
  }
  return report;
}

std::string render_text(const CheckReport& report) {
  std::ostringstream out;
  for (const auto& o : report.objects) {
    out << object_title(o) << " (" << where(o.file, o.line) << ")\n";
    if (std::none_of(o.findings.begin(), o.findings.end(), [](const Finding& f) { return f.outcome == Outcome::kFinding; })) {
      out << "  no findings\n";
    }
    for (const auto& f : o.findings) {
      if (f.outcome != Outcome::kFinding) {
        out << "  " << f.check << ": " << format_annotation(f) << "\n";
        continue;
      }
      std::string warning = format_warning(f);
      warning = warning.substr(warning.find(": ") + 2);  // the check id is printed in front
      out << "  " << f.check << ": " << warning << "\n";
      out << "    cases:";
      for (const auto& id : f.cases) out << " " << id;
      if (!f.cases.empty()) out << "\n    see: " << first_source(f.cases.front());
      out << "\n";
    }
  }
  for (const auto& s : report.skipped) {
    out << "skipped " << s.kind << " " << s.name << " (" << where(s.file, s.line) << "): not a kind kubegap evaluates\n";
  }
  for (const auto& note : report.notes) out << "note: " << note << "\n";
  out << report.objects.size() << " object(s) checked, " << report.finding_count() << " finding(s)";
  if (report.budgets + report.nodes == 0) {
    out << "; disruption-budget not evaluated (no PodDisruptionBudgets or Nodes in the input)";
  }
  out << "\n";
  return out.str();
}

std::string render_json(const CheckReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  write(w, "kubegap.io/v1alpha1");
  w.Key("kind");
  write(w, "CheckReport");
  w.Key("version");
  write(w, kVersion);
  w.Key("objects");
  w.StartArray();
  for (const auto& o : report.objects) {
    w.StartObject();
    write_origin(w, o);
    w.Key("namespace"); write(w, o.namespace_name);
    w.Key("name"); write(w, o.name);
    w.Key("findings");
    w.StartArray();
    for (const auto& f : o.findings) {
      w.StartObject();
      w.Key("check"); write(w, f.check);
      w.Key("outcome"); write(w, outcome_name(f.outcome));
      w.Key("message"); write(w, f.outcome == Outcome::kFinding ? format_warning(f) : std::string());
      w.Key("reason"); write(w, format_annotation(f));
      w.Key("parts");
      w.StartArray();
      for (const auto& p : f.parts) write(w, p);
      w.EndArray();
      w.Key("cases");
      w.StartArray();
      for (const auto& id : f.cases) {
        w.StartObject();
        w.Key("id"); write(w, id);
        w.Key("url"); write(w, first_source(id));
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("skipped");
  w.StartArray();
  for (const auto& s : report.skipped) {
    w.StartObject();
    write_origin(w, s);
    w.Key("name"); write(w, s.name);
    w.EndObject();
  }
  w.EndArray();
  w.Key("summary");
  w.StartObject();
  w.Key("objects"); w.Uint64(report.objects.size());
  w.Key("findings"); w.Uint64(report.finding_count());
  w.Key("podDisruptionBudgets"); w.Uint64(report.budgets);
  w.Key("nodes"); w.Uint64(report.nodes);
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string render_sarif(const CheckReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("$schema"); write(w, "https://json.schemastore.org/sarif-2.1.0.json");
  w.Key("version"); write(w, "2.1.0");
  w.Key("runs");
  w.StartArray();
  w.StartObject();
  w.Key("tool");
  w.StartObject();
  w.Key("driver");
  w.StartObject();
  w.Key("name"); write(w, "kubegap");
  w.Key("version"); write(w, kVersion);
  w.Key("rules");
  w.StartArray();
  for (const auto& check : check_registry()) {
    w.StartObject();
    w.Key("id"); write(w, check.id);
    w.Key("shortDescription");
    w.StartObject(); w.Key("text"); write(w, check.summary); w.EndObject();
    w.Key("helpUri"); write(w, first_source(check.cases.front()));
    w.Key("defaultConfiguration");
    w.StartObject(); w.Key("level"); write(w, "warning"); w.EndObject();
    w.Key("properties");
    w.StartObject();
    w.Key("cases");
    w.StartArray();
    for (const auto& id : check.cases) write(w, id);
    w.EndArray();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.Key("results");
  w.StartArray();
  for (const auto& o : report.objects) {
    for (const auto& f : o.findings) {
      if (f.outcome == Outcome::kNotEvaluated) continue;
      w.StartObject();
      w.Key("ruleId"); write(w, f.check);
      w.Key("level"); write(w, "warning");
      w.Key("message");
      w.StartObject();
      w.Key("text"); write(w, object_title(o) + ": " + (f.outcome == Outcome::kFinding ? format_warning(f) : format_annotation(f)));
      w.EndObject();
      w.Key("locations");
      w.StartArray();
      w.StartObject();
      w.Key("physicalLocation");
      w.StartObject();
      w.Key("artifactLocation");
      w.StartObject(); w.Key("uri"); write(w, o.file); w.EndObject();
      w.Key("region");
      w.StartObject(); w.Key("startLine"); w.Int(std::max(o.line, 1)); w.EndObject();
      w.EndObject();
      w.EndObject();
      w.EndArray();
      if (f.outcome == Outcome::kExempt) {  // kubegap.io/exempt: shown as suppressed
        w.Key("suppressions");
        w.StartArray();
        w.StartObject();
        w.Key("kind"); write(w, "inSource");
        w.Key("justification"); write(w, f.reason);
        w.EndObject();
        w.EndArray();
      }
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace kubegap
