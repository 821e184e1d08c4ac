#pragma once
// Reading YAML (and JSON, which is YAML) documents into RapidJSON, so one set of object
// decoders serves files, the API server and admission requests alike.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

namespace kubegap {

// ConfigError: a file the operator gave us is wrong; the message names file and line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct YamlDocument {
  int line = 0;  // 1-based line where the document starts
  rapidjson::Document json;
};

// load_yaml_documents: every non-empty document of a (multi-document) YAML or JSON text.
// Plain scalars resolve as in YAML 1.2's core schema (null, true/false, integers,
// floats); quoted scalars stay strings. Throws ConfigError naming `source` and the line.
std::vector<YamlDocument> load_yaml_documents(std::string_view text, const std::string& source);

// read_file: the whole file, or ConfigError naming it.
std::string read_file(const std::string& path);

// yaml_to_json: one YAML node into `allocator`'s document. `budget` is how many nodes the
// conversion may still emit: YAML aliases can make a cycle or expand exponentially
// ("billion laughs"), so an input that exceeds it is refused with ConfigError.
rapidjson::Value yaml_to_json(const YAML::Node& node, rapidjson::Document::AllocatorType& allocator,
                              std::size_t& budget);

// yaml_node_budget: the budget for a text of `bytes` bytes: generous for real manifests,
// far below what a hostile alias tree would need.
inline std::size_t yaml_node_budget(std::size_t bytes) { return 100000 + 16 * bytes; }

}  // namespace kubegap
