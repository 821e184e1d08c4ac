#pragma once
// Reading YAML (and JSON, which is YAML; a document that is one JSON object is parsed by
// RapidJSON directly, at a quarter of the peak memory) documents into RapidJSON, with the
// line of every field, so one set of object decoders serves files, the API server and
// admission requests alike and their errors point at lines. The loader of "a file of
// Kubernetes objects" is built on this (webhook/core/object_loader.h).
//
//   ParsedYaml parsed = parse_yaml_text(text, "policy.yaml");  // never throws on the text
//   for (const YamlDocument& d : parsed.documents) { ... d.json, field_line(d.field_lines, "spec") ... }

#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "webhook/core/errors.h"

namespace kubegap {

// FieldLines: the 1-based line of each field of a document, keyed by its path rendered as
// JsonPath::render renders it under an empty root ("spec.containers[0].name"), so that an
// object decoder's error can point at the line of the field it names. A mapping member
// maps to the line of its key, a sequence element to the line where it starts, "" to the
// document itself.
using FieldLines = std::unordered_map<std::string, int>;

// field_line: the line of `path`, or of its nearest ancestor that has one (paths deeper
// than what is recorded fall back to their ancestors); 0 when none has.
int field_line(const FieldLines& lines, std::string_view path);

struct YamlDocument {
  int line = 0;  // 1-based line where the document starts
  rapidjson::Document json;
  FieldLines field_lines;
};

// load_yaml_documents: every non-empty document of a (multi-document) YAML or JSON text.
// Plain scalars resolve as in YAML 1.2's core schema (null, true/false, integers,
// floats); quoted scalars stay strings; merge keys (`<<: *base`) are expanded. Throws
// ConfigError naming `source` and the line.
std::vector<YamlDocument> load_yaml_documents(std::string_view text, const std::string& source);

// YamlConversion: the state of converting the nodes of one text. YAML aliases can make
// a cycle or expand exponentially ("billion laughs"), so `budget` is how many nodes the
// conversion may still emit; an input that exceeds it is refused with ConfigError.
struct YamlConversion {
  std::size_t budget = 0;
  FieldLines* field_lines = nullptr;  // where to record field lines; nullptr: don't
  std::size_t field_line_bytes = 0;   // path bytes that may still be recorded
  int line_offset = 0;                // lines of the text before the parsed part
};

// yaml_to_json: one YAML node into `allocator`'s document, merge keys expanded per YAML
// 1.1 (explicit keys win over merged ones; of a sequence of merged mappings, the earlier
// wins). Throws ConfigError ("line N: ...") on what JSON cannot hold.
rapidjson::Value yaml_to_json(const YAML::Node& node, rapidjson::Document::AllocatorType& allocator,
                              YamlConversion& conversion);

// json_to_yaml: a JSON document as block YAML (for reports people read and `kubectl apply
// -f`); strings are quoted where YAML would read them as something else. For text this
// program wrote: nesting is not bounded.
std::string json_to_yaml(const rapidjson::Value& value);

// yaml_node_budget: the budget for a text of `bytes` bytes: generous for real manifests,
// far below what a hostile alias tree would need.
inline std::size_t yaml_node_budget(std::size_t bytes) { return 100000 + 16 * bytes; }

// ParsedYaml: the documents of a text that could be read, and why the others could not.
struct ParsedYaml {
  std::vector<YamlDocument> documents;
  std::vector<InputProblem> problems;  // in the order found
};

// parse_yaml_text: every non-empty document of `text`, each `---` part on its own so
// that one part's syntax error costs only that part. Never throws on the text.
// `node_budget`, when not 0, replaces yaml_node_budget(text.size()), and `with_lines`
// false records no field lines (text read inside another object has lines of its own).
ParsedYaml parse_yaml_text(std::string_view text, const std::string& file, std::size_t node_budget = 0,
                           bool with_lines = true);

// member_path, index_path: a child's field path, rendered exactly as JsonPath::render
// renders it (no dot before the first name or before an index; an empty name adds
// nothing), so a decoder's error finds the line recorded here.
std::string member_path(const std::string& parent, std::string_view name);
std::string index_path(const std::string& parent, std::size_t index);

// join_path: `relative` (rendered under an empty root) below the node at `base`.
std::string join_path(const std::string& base, std::string_view relative);

}  // namespace kubegap
