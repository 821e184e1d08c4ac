#pragma once
// Reading YAML (and JSON, which is YAML; a document that is one JSON object is parsed by
// RapidJSON directly, at a quarter of the peak memory) documents into RapidJSON, so one set of object
// decoders serves files, the API server and admission requests alike; and the one loader
// of "a file of Kubernetes objects" that `check` and `--cluster-state` share.
//
//   LoadedObjects loaded;
//   load_objects(read_file(path), path, loaded);   // never throws on the file's content
//   for (const auto& o : loaded.objects) { ... o.kind, *o.json, o.field_line(error, root) ... }
//   for (const auto& p : loaded.problems) std::cerr << p.text() << "\n";

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

namespace kubegap {

// ConfigError: a file the operator gave us is wrong; the message names file and line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

// read_file: the whole file, or ConfigError naming it.
std::string read_file(const std::string& path);

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

// InputProblem: why (part of) an input could not be read. line 0: the whole file; no
// file: the whole input.
struct InputProblem {
  std::string file;
  int line = 0;
  std::string message;

  std::string text() const;  // "file:line: message", "file: message" for line 0
};

// KubeObject: one Kubernetes object of an input, with where it was found. Lists are
// expanded into their items; an AdmissionReview stands for its request.object.
struct KubeObject {
  std::string file;
  int line = 0;
  // From the object, or implied by its typed `<Kind>List` (the API server's lists leave
  // them off their items). Empty when neither says: the caller decides whether that is
  // an error.
  std::string api_version, kind;
  std::shared_ptr<const YamlDocument> document;  // keeps `json` alive
  const rapidjson::Value* json = nullptr;
  std::string path;  // of the object in its document: "", "items[2]", "request.object"

  // field_line: the line of the field that a decoder's `error` names, its path rendered
  // under the root name `root` ("Pod.spec.containers: expected an array", root "Pod");
  // the object's own line when the field cannot be found.
  int field_line(std::string_view error, std::string_view root) const;
};

struct LoadedObjects {
  std::vector<KubeObject> objects;
  std::vector<InputProblem> problems;  // in input order
};

// load_objects: every object of a YAML or JSON text, appended to `out`. A problem (invalid
// YAML, a document that is not a mapping, a List whose items are not a list, ...) costs
// only the document it is in: each `---` document is parsed on its own, so the objects of
// the others are still read. Never throws on the text.
void load_objects(std::string_view text, const std::string& file, LoadedObjects& out);

}  // namespace kubegap
