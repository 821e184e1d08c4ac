// json_to_yaml (yaml_json.h): JSON written as block YAML for people and `kubectl apply`.
#include <yaml-cpp/emitter.h>

#include <string>
#include <unordered_set>

#include "webhook/core/yaml_json.h"

namespace kubegap {

namespace {

// reads_as_other_type: a plain scalar that a YAML 1.1 or 1.2 reader would not take as a
// string (yaml-cpp's emitter leaves "true", "1" or "null" unquoted). Conservative: any
// text that starts like a number is quoted.
bool reads_as_other_type(const std::string& text) {
  if (text.empty()) return true;
  const char first = text.front();
  if ((first >= '0' && first <= '9') || first == '-' || first == '+' || first == '.') return true;
  std::string lower;
  for (const char c : text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  static const std::unordered_set<std::string> kWords = {"true", "false", "yes", "no",   "on",
                                                         "off",  "y",     "n",   "null", "~"};
  return kWords.contains(lower);
}

void emit_json(YAML::Emitter& out, const rapidjson::Value& value) {
  if (value.IsObject()) {
    out << YAML::BeginMap;
    for (const auto& m : value.GetObject()) {
      out << YAML::Key << std::string(m.name.GetString(), m.name.GetStringLength()) << YAML::Value;
      emit_json(out, m.value);
    }
    out << YAML::EndMap;
  } else if (value.IsArray()) {
    out << YAML::BeginSeq;
    for (const auto& item : value.GetArray()) emit_json(out, item);
    out << YAML::EndSeq;
  } else if (value.IsString()) {
    const std::string text(value.GetString(), value.GetStringLength());
    if (reads_as_other_type(text)) out << YAML::DoubleQuoted;
    out << text;
  } else if (value.IsBool()) {
    out << value.GetBool();
  } else if (value.IsInt64()) {
    out << value.GetInt64();
  } else if (value.IsUint64()) {
    out << value.GetUint64();
  } else if (value.IsNumber()) {
    out << value.GetDouble();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

std::string json_to_yaml(const rapidjson::Value& value) {
  YAML::Emitter out;
  emit_json(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace kubegap
