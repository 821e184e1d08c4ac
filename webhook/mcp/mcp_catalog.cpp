#include "webhook/mcp/mcp_catalog.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <stdexcept>

#include "policies/checks.h"

namespace kubegap {
namespace {

// The report of `check` and `scan` (docs/cli.md#output-formats), as JSON Schema: what an
// agent can rely on. Objects stay open (additionalProperties), so a field added to the
// report does not break a client that validates.
constexpr std::string_view kReportSchema = R"json({
  "type": "object",
  "required": ["apiVersion", "kind", "version", "objects", "skipped", "errors", "notes", "summary"],
  "properties": {
    "apiVersion": {"type": "string", "const": "kubegap.io/v1alpha1"},
    "kind": {"type": "string", "const": "CheckReport"},
    "version": {"type": "string"},
    "objects": {"type": "array", "items": {
      "type": "object",
      "required": ["file", "line", "apiVersion", "kind", "namespace", "name", "classes", "findings"],
      "properties": {
        "file": {"type": "string"}, "line": {"type": "integer"}, "apiVersion": {"type": "string"},
        "kind": {"type": "string"}, "namespace": {"type": "string"}, "name": {"type": "string"},
        "classes": {"type": "array", "items": {"type": "object", "required": ["part", "class", "why"], "properties": {
          "part": {"type": "string"},
          "class": {"type": "string", "enum": ["training", "serving", "auto", "diagnostic", "not-evaluated"]},
          "coordinator": {"type": "boolean"}, "why": {"type": "string"}}}},
        "findings": {"type": "array", "items": {"type": "object", "required": ["check", "outcome"], "properties": {
          "check": {"type": "string"}, "outcome": {"type": "string"}, "message": {"type": "string"},
          "action": {"type": "string"}, "reason": {"type": "string"}, "remedy": {"type": "string"},
          "parts": {"type": "array", "items": {"type": "string"}},
          "cases": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "url": {"type": "string"}}}}}}}}}},
    "skipped": {"type": "array", "items": {"type": "object", "properties": {
      "file": {"type": "string"}, "line": {"type": "integer"}, "apiVersion": {"type": "string"},
      "kind": {"type": "string"}, "name": {"type": "string"}}}},
    "errors": {"type": "array", "items": {"type": "object", "required": ["file", "line", "message"], "properties": {
      "file": {"type": "string"}, "line": {"type": "integer"}, "message": {"type": "string"}}}},
    "notes": {"type": "array", "items": {"type": "string"}},
    "summary": {"type": "object", "required": ["objects", "findings", "errors"], "properties": {
      "objects": {"type": "integer"}, "findings": {"type": "integer"}, "errors": {"type": "integer"},
      "podDisruptionBudgets": {"type": "integer"}, "nodes": {"type": "integer"}}}
  }
})json";

// The additions to the report of a tool that cuts it: what the cut left out, counts by check.
constexpr std::string_view kScanAdditions = R"json({
  "omittedObjects": {"type": "integer", "minimum": 0},
  "summary": {"type": "object", "required": ["objects", "findings", "errors", "objectsWithFindings", "byCheck"],
    "properties": {
      "objects": {"type": "integer"}, "findings": {"type": "integer"}, "errors": {"type": "integer"},
      "podDisruptionBudgets": {"type": "integer"}, "nodes": {"type": "integer"},
      "objectsWithFindings": {"type": "integer"},
      "byCheck": {"type": "object", "additionalProperties": {"type": "integer"}}}}
})json";

constexpr std::string_view kCheckInput = R"json({
  "type": "object", "additionalProperties": false,
  "properties": {
    "manifests": {"type": "string", "description": "Kubernetes manifests as YAML or JSON text; several documents (---) or a List. Named <stdin> in the report."},
    "paths": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
      "description": "Files or folders (read recursively for *.yaml, *.yml, *.json), relative to the server's working directory; they must lie under the client's roots (or the working directory when the client has none)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200,
      "description": "at most this many objects in the result (the summary counts all; omittedObjects says how many were left out)"}
  }
})json";

constexpr std::string_view kScanInput = R"json({
  "type": "object", "additionalProperties": false,
  "properties": {
    "context": {"type": "string", "description": "kubeconfig context to use (default: the current context)"},
    "namespace": {"type": "string", "description": "only this namespace (default: every namespace)"},
    "kinds": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": @KINDS@},
      "description": "only these kinds (default: every kind kubegap evaluates, and Pods)"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200,
      "description": "at most this many objects in the result (the summary counts all; omittedObjects says how many were left out)"}
  }
})json";

constexpr std::string_view kExplainInput = R"json({
  "type": "object", "additionalProperties": false,
  "properties": {
    "manifests": {"type": "string", "description": "the object(s) as YAML or JSON text"},
    "kind": {"type": "string", "enum": @KINDS@, "description": "with name: an object from the cluster"},
    "name": {"type": "string", "minLength": 1},
    "namespace": {"type": "string", "description": "the object's namespace (default: default)"},
    "context": {"type": "string", "description": "kubeconfig context (default: the current context)"}
  }
})json";

constexpr std::string_view kExplainOutput = R"json({
  "type": "object", "required": ["objects", "errors", "text"],
  "properties": {
    "objects": {"type": "array", "items": {"type": "object", "required": ["kind", "name", "classes", "provenance"], "properties": {
      "file": {"type": "string"}, "line": {"type": "integer"}, "apiVersion": {"type": "string"},
      "kind": {"type": "string"}, "namespace": {"type": "string"}, "name": {"type": "string"},
      "classes": {"type": "array", "items": {"type": "object", "required": ["part", "class", "why"], "properties": {
        "part": {"type": "string"}, "class": {"type": "string"}, "coordinator": {"type": "boolean"}, "why": {"type": "string"}}}},
      "provenance": {"type": "array", "items": {"type": "string"}}}}},
    "errors": {"type": "array", "items": {"type": "object", "properties": {
      "file": {"type": "string"}, "line": {"type": "integer"}, "message": {"type": "string"}}}},
    "text": {"type": "string", "description": "what check --explain prints"}
  }
})json";

constexpr std::string_view kEmptyInput =
    R"json({"type": "object", "additionalProperties": false, "properties": {}})json";

constexpr std::string_view kCasesOutput = R"json({
  "type": "object", "required": ["checks", "cases"],
  "properties": {
    "checks": {"type": "array", "items": {"type": "object", "required": ["id", "summary", "remedy", "cases"], "properties": {
      "id": {"type": "string"}, "summary": {"type": "string"}, "remedy": {"type": "string"},
      "cases": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "why": {"type": "string"}}}}}}},
    "cases": {"type": "array", "items": {"type": "object", "required": ["id", "title", "sources"]}}
  }
})json";

constexpr std::string_view kCaseInput = R"json({
  "type": "object", "additionalProperties": false, "required": ["id"],
  "properties": {"id": {"type": "string", "enum": @IDS@, "description": "a case id, or a check id for that check and the cases it cites"}}
})json";

// get_case answers a case, or a check with its cases (as `cases ID -o json` does).
constexpr std::string_view kCaseOutput = R"json({
  "type": "object",
  "properties": {
    "id": {"type": "string"}, "title": {"type": "string"}, "date": {"type": "string"},
    "organisation": {"type": "string"}, "summary": {"type": "string"},
    "key_figures": {"type": "array"}, "lessons": {"type": "array"}, "checks": {"type": "array"},
    "sources": {"type": "array"}, "cases": {"type": "array"}
  }
})json";

std::string json_list(const std::vector<std::string>& words) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const auto& word : words) w.String(word.c_str(), static_cast<rapidjson::SizeType>(word.size()));
  w.EndArray();
  return {buffer.GetString(), buffer.GetSize()};
}

rapidjson::Document parse_schema(std::string_view text, const std::string& kinds, const std::string& ids) {
  std::string filled(text);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"@KINDS@", kinds}, {"@IDS@", ids}}) {
    for (auto at = filled.find(key); at != std::string::npos; at = filled.find(key))
      filled.replace(at, key.size(), value);
  }
  rapidjson::Document d;
  d.Parse(filled.c_str(), filled.size());
  if (d.HasParseError()) throw std::logic_error("an MCP tool schema is not JSON");
  return d;
}

// scan_output_schema: the report schema with the members of a cut report.
rapidjson::Document scan_output_schema(const std::string& kinds, const std::string& ids) {
  rapidjson::Document schema = parse_schema(kReportSchema, kinds, ids);
  rapidjson::Document additions = parse_schema(kScanAdditions, kinds, ids);
  auto& properties = schema["properties"];
  for (auto& member : additions.GetObject()) {
    properties.RemoveMember(member.name);
    properties.AddMember(rapidjson::Value(member.name, schema.GetAllocator()),
                         rapidjson::Value(member.value, schema.GetAllocator()), schema.GetAllocator());
  }
  schema["required"].PushBack("omittedObjects", schema.GetAllocator());
  return schema;
}

ToolSpec spec(std::string name, std::string title, std::string description, rapidjson::Document input,
              rapidjson::Document output, bool open_world) {
  ToolSpec t;
  t.name = std::move(name);
  t.title = std::move(title);
  t.description = std::move(description);
  t.input_schema = std::move(input);
  t.output_schema = std::move(output);
  t.open_world = open_world;
  return t;
}

template <typename Writer>
void write(Writer& w, std::string_view text) {
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

}  // namespace

McpCatalog::McpCatalog(const Policy& policy, std::string policy_text, const CaseLibrary& library)
    : policy_text_(std::move(policy_text)), library_(library) {
  std::vector<std::string> kinds;
  for (const auto& row : policy.workload_kinds) {
    if (std::find(kinds.begin(), kinds.end(), row.kind) == kinds.end()) kinds.push_back(row.kind);
  }
  std::vector<std::string> ids;
  for (const auto& c : library.cases()) ids.push_back(c.id);
  for (const auto& check : check_registry()) ids.emplace_back(check.id);
  const std::string k = json_list(kinds), i = json_list(ids);
  tools_.push_back(spec("check_manifests", "Check Kubernetes manifests",
                        "Finds the reliability gaps of training jobs (checkpoints lost with the pod, no "
                        "PodDisruptionBudget, one zone, GPU pods kept on failed nodes) in manifests given inline or "
                        "as paths, without a cluster. The same report as `kubegap-webhook check --output json`, "
                        "cut to `limit` objects (`omittedObjects` counts the rest): each finding with its fix "
                        "and the public incident cases behind it; input errors are listed in `errors`.",
                        parse_schema(kCheckInput, k, i), scan_output_schema(k, i), false));
  tools_.push_back(spec("scan_cluster", "Scan the cluster",
                        "Lists what runs in the cluster of the kubeconfig (read-only: GET requests only) and "
                        "reports the same findings as `kubegap-webhook scan --output json`, with a summary by "
                        "check. Results are cut to `limit` objects; `omittedObjects` counts the rest.",
                        parse_schema(kScanInput, k, i), scan_output_schema(k, i), true));
  tools_.push_back(spec("explain", "Explain how objects are classified",
                        "For objects given inline, or one object of the cluster (kind, namespace, name): the class "
                        "of each part (training, serving, auto, diagnostic) and the rule that decided it, as "
                        "`kubegap-webhook check --explain` prints, and where a TrainJob's fields came from.",
                        parse_schema(kExplainInput, k, i), parse_schema(kExplainOutput, k, i), true));
  tools_.push_back(spec("list_checks", "List the checks",
                        "The checks with what each finds, its fix, and the incident cases it cites (as "
                        "`kubegap-webhook cases --output json`).",
                        parse_schema(kEmptyInput, k, i), parse_schema(kCasesOutput, k, i), false));
  tools_.push_back(spec("get_case", "Get an incident case",
                        "One public incident case in full: what the sources say, with each figure's source, "
                        "our reading, and the checks it backs. A check id gives that check and its cases.",
                        parse_schema(kCaseInput, k, i), parse_schema(kCaseOutput, k, i), false));
}

const ToolSpec* McpCatalog::tool(std::string_view name) const {
  const auto it = std::find_if(tools_.begin(), tools_.end(), [&](const ToolSpec& t) { return t.name == name; });
  return it == tools_.end() ? nullptr : &*it;
}

std::string McpCatalog::tools_list_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("tools");
  w.StartArray();
  for (const auto& t : tools_) {
    w.StartObject();
    w.Key("name");
    write(w, t.name);
    w.Key("title");
    write(w, t.title);
    w.Key("description");
    write(w, t.description);
    w.Key("inputSchema");
    t.input_schema.Accept(w);
    w.Key("outputSchema");
    t.output_schema.Accept(w);
    w.Key("annotations");
    w.StartObject();
    w.Key("title");
    write(w, t.title);
    w.Key("readOnlyHint");
    w.Bool(true);
    w.Key("destructiveHint");
    w.Bool(false);
    w.Key("idempotentHint");
    w.Bool(true);
    w.Key("openWorldHint");
    w.Bool(t.open_world);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

std::string McpCatalog::resources_list_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("resources");
  w.StartArray();
  for (const auto& c : library_.cases()) {
    w.StartObject();
    w.Key("uri");
    write(w, std::string(kCaseUriPrefix) + c.id);
    w.Key("name");
    write(w, c.id);
    w.Key("title");
    write(w, c.title);
    w.Key("description");
    write(w, "incident case (" + c.date + ", " + c.organisation + ") cited by kubegap's checks");
    w.Key("mimeType");
    write(w, "text/plain");
    w.EndObject();
  }
  w.StartObject();
  w.Key("uri");
  write(w, kPolicyUri);
  w.Key("name");
  write(w, "policy");
  w.Key("title");
  write(w, "The active kubegap policy");
  w.Key("description");
  write(w, "the policy the checks run with: the --policy file, or the built-in defaults");
  w.Key("mimeType");
  write(w, "application/yaml");
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

std::string McpCatalog::resource_templates_json() const {
  return R"json({"resourceTemplates":[{"uriTemplate":"kubegap://cases/{id}","name":"case",)json"
         R"json("title":"An incident case","description":"a public incident case kubegap's checks cite, by id",)json"
         R"json("mimeType":"text/plain"}]})json";
}

std::optional<ResourceText> McpCatalog::read_resource(std::string_view uri) const {
  if (uri == kPolicyUri) return ResourceText{std::string(uri), "application/yaml", policy_text_};
  if (!uri.starts_with(kCaseUriPrefix)) return std::nullopt;
  const Case* c = library_.find(uri.substr(kCaseUriPrefix.size()));
  if (c == nullptr) return std::nullopt;
  return ResourceText{std::string(uri), "text/plain", case_as_text(*c)};
}

std::string McpCatalog::prompts_list_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("prompts");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  write(w, kAuditPrompt);
  w.Key("title");
  write(w, "Audit training reliability");
  w.Key("description");
  write(w,
        "Find what in the cluster, or in the given manifests, will cost training time, grouped by job, with "
        "each fix proposed as a patch to review (nothing is applied)");
  w.Key("arguments");
  w.StartArray();
  for (const auto& [name, what] :
       {std::pair<const char*, const char*>{"paths",
                                            "manifest files or folders to check, separated by commas or "
                                            "spaces (default: scan the cluster instead)"},
        {"namespace", "with no paths: scan only this namespace"}}) {
    w.StartObject();
    w.Key("name");
    write(w, name);
    w.Key("description");
    write(w, what);
    w.Key("required");
    w.Bool(false);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

std::optional<PromptText> McpCatalog::prompt(std::string_view name,
                                             const std::map<std::string, std::string>& arguments) const {
  if (name != kAuditPrompt) return std::nullopt;
  const auto value = [&](const char* key) {
    const auto it = arguments.find(key);
    return it == arguments.end() ? std::string() : it->second;
  };
  const std::string paths = value("paths"), ns = value("namespace");
  std::string text = "Audit these Kubernetes training workloads for reliability gaps with the kubegap tools.\n\n";
  if (!paths.empty()) {
    text += "1. Call check_manifests with paths [" + paths +
            "] (split on commas or spaces). If it lists input errors, report them first.\n";
  } else {
    text += "1. Call scan_cluster" + (ns.empty() ? std::string() : " with namespace \"" + ns + "\"") +
            ". If its errors say a resource is forbidden, say which: the findings for it are missing.\n";
  }
  text +=
      "2. Group the findings by job (the object that owns them: a PyTorchJob, JobSet, TrainJob, Job, ...), most "
      "findings first. Findings with outcome \"not-evaluated\", \"exempt\" or \"note\" are not gaps: mention them "
      "briefly.\n"
      "3. For each gap, say in one sentence what it costs a training run, cite the first case (get_case gives "
      "the sources), and propose the fix as a patch to the manifest (a unified diff or a strategic-merge patch "
      "the user can review). Use the finding's `remedy`.\n"
      "4. Do not apply, create, edit or delete anything, in the cluster or on disk: present the patches for the "
      "user to review and apply themselves.\n";
  return PromptText{"Audit training reliability with kubegap", text};
}

}  // namespace kubegap
