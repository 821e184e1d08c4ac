#include "webhook/yaml_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace kubegap {
namespace {

bool parse_integer(const std::string& text, std::int64_t& out) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, out);
  return !digits.empty() && ec == std::errc() && ptr == end;
}

bool looks_like_float(const std::string& text) {
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return std::regex_match(text, kFloat);
}

rapidjson::Value scalar_to_json(const YAML::Node& node, rapidjson::Document::AllocatorType& a) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "?") {  // plain (unquoted) scalar: resolve its type
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
      return rapidjson::Value(rapidjson::kNullType);
    }
    if (text == "true" || text == "True" || text == "TRUE") return rapidjson::Value(true);
    if (text == "false" || text == "False" || text == "FALSE") return rapidjson::Value(false);
    std::int64_t integer = 0;
    if (parse_integer(text, integer)) return rapidjson::Value(integer);
    if (looks_like_float(text)) {
      // strtod, not stod: an out-of-range number ("1e999") must not throw.
      const double value = std::strtod(text.c_str(), nullptr);
      if (std::isfinite(value)) return rapidjson::Value(value);
    }
  }
  return rapidjson::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), a);
}

}  // namespace

rapidjson::Value yaml_to_json(const YAML::Node& root, rapidjson::Document::AllocatorType& a, std::size_t& budget) {
  // Iterative, so a deeply nested file cannot exhaust the stack.
  struct Frame {
    YAML::Node node;
    rapidjson::Value* target;
  };
  rapidjson::Value result;
  std::vector<Frame> stack{{root, &result}};
  while (!stack.empty()) {
    Frame frame = std::move(stack.back());
    stack.pop_back();
    if (budget == 0) {
      throw ConfigError("line " + std::to_string(frame.node.Mark().line + 1) +
                        ": the YAML expands to too many nodes (cyclic or exponential aliases?)");
    }
    --budget;
    const YAML::Node& node = frame.node;
    switch (node.Type()) {
      case YAML::NodeType::Sequence: {
        frame.target->SetArray();
        frame.target->Reserve(static_cast<rapidjson::SizeType>(node.size()), a);
        for (std::size_t i = 0; i < node.size(); ++i) frame.target->PushBack(rapidjson::Value(), a);
        for (std::size_t i = 0; i < node.size(); ++i) {
          stack.push_back({node[i], &(*frame.target)[static_cast<rapidjson::SizeType>(i)]});
        }
        break;
      }
      case YAML::NodeType::Map: {
        frame.target->SetObject();
        for (const auto& entry : node) {
          if (!entry.first.IsScalar()) {
            throw ConfigError("line " + std::to_string(entry.first.Mark().line + 1) + ": mapping keys must be scalars");
          }
          const std::string& key = entry.first.Scalar();
          frame.target->AddMember(rapidjson::Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()), a),
                                  rapidjson::Value(), a);
        }
        auto member = frame.target->MemberBegin();
        for (const auto& entry : node) {
          stack.push_back({entry.second, &member->value});
          ++member;
        }
        break;
      }
      case YAML::NodeType::Scalar:
        *frame.target = scalar_to_json(node, a);
        break;
      default:
        frame.target->SetNull();
        break;
    }
  }
  return result;
}

std::vector<YamlDocument> load_yaml_documents(std::string_view text, const std::string& source) {
  std::vector<YAML::Node> nodes;
  try {
    std::istringstream stream{std::string(text)};
    nodes = YAML::LoadAll(stream);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  std::vector<YamlDocument> documents;
  std::size_t budget = yaml_node_budget(text.size());
  for (const auto& node : nodes) {
    if (!node || node.IsNull()) continue;
    YamlDocument doc;
    doc.line = node.Mark().line + 1;
    rapidjson::Value value;
    try {
      value = yaml_to_json(node, doc.json.GetAllocator(), budget);
    } catch (const ConfigError& e) {
      throw ConfigError(source + ": " + e.what());
    }
    static_cast<rapidjson::Value&>(doc.json).Swap(value);
    documents.push_back(std::move(doc));
  }
  return documents;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": read error");
  return content.str();
}

}  // namespace kubegap
