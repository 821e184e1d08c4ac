#include "webhook/case_library.h"

#include <algorithm>
#include <set>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <yaml-cpp/yaml.h>

#include "webhook/yaml_json.h"

namespace kubegap {
namespace {

class CaseParser {
 public:
  explicit CaseParser(std::string source) : source_(std::move(source)) {}

  Case parse(const YAML::Node& root) const {
    if (!root.IsMap()) fail(root, "(top level)", "expected a mapping");
    static const std::set<std::string> kKeys = {"id",          "title",   "date",   "organisation",
                                                "summary",     "key_figures", "lessons", "checks",
                                                "sources"};
    for (const auto& entry : root) {
      if (!kKeys.contains(entry.first.Scalar())) fail(entry.first, entry.first.Scalar(), "unknown key");
    }
    Case c;
    c.id = text(root, "id");
    c.title = text(root, "title");
    c.date = text(root, "date");
    c.organisation = text(root, "organisation");
    c.summary = text(root, "summary");
    for (const auto& figure : list(root, "key_figures")) {
      c.key_figures.push_back({text(figure, "text"), text(figure, "source"),
                               figure["secondary"] && figure["secondary"].as<bool>()});
    }
    for (const auto& lesson : list(root, "lessons")) c.lessons.push_back(lesson.as<std::string>());
    for (const auto& check : list(root, "checks")) c.checks.push_back(check.as<std::string>());
    for (const auto& source : list(root, "sources")) {
      c.sources.push_back({text(source, "url"), text(source, "title")});
    }
    return c;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) const {
    throw ConfigError(source_ + ":" + std::to_string(at.Mark().line + 1) + ": " + key + ": " + what);
  }
  std::string text(const YAML::Node& map, const char* key) const {
    const YAML::Node node = map[key];
    if (!node || !node.IsScalar() || node.Scalar().empty()) fail(map, key, "missing or not a string");
    return node.Scalar();
  }
  YAML::Node list(const YAML::Node& map, const char* key) const {
    const YAML::Node node = map[key];
    if (!node || !node.IsSequence()) fail(map, key, "missing or not a list");
    return node;
  }

  std::string source_;
};

template <typename Writer>
void write_pair(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

}  // namespace

const Case* CaseLibrary::find(std::string_view id) const {
  const auto it = std::find_if(cases_.begin(), cases_.end(), [&](const Case& c) { return c.id == id; });
  return it == cases_.end() ? nullptr : &*it;
}

Case parse_case(std::string_view yaml_text, const std::string& source) {
  try {
    return CaseParser(source).parse(YAML::Load(std::string(yaml_text)));
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

const CaseLibrary& case_library() {
  static const CaseLibrary kLibrary = [] {
    std::vector<Case> cases;
    for (const auto& file : embedded_case_files()) cases.push_back(parse_case(file.content, file.name));
    return CaseLibrary(std::move(cases));
  }();
  return kLibrary;
}

std::string cases_as_json(const CaseLibrary& library) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const auto& c : library.cases()) {
    w.StartObject();
    write_pair(w, "id", c.id);
    write_pair(w, "title", c.title);
    write_pair(w, "date", c.date);
    write_pair(w, "organisation", c.organisation);
    write_pair(w, "summary", c.summary);
    w.Key("key_figures");
    w.StartArray();
    for (const auto& f : c.key_figures) {
      w.StartObject();
      write_pair(w, "text", f.text);
      write_pair(w, "source", f.source);
      w.Key("secondary");
      w.Bool(f.secondary);
      w.EndObject();
    }
    w.EndArray();
    for (const auto& [key, items] : {std::pair{"lessons", &c.lessons}, std::pair{"checks", &c.checks}}) {
      w.Key(key);
      w.StartArray();
      for (const auto& item : *items) w.String(item.c_str(), static_cast<rapidjson::SizeType>(item.size()));
      w.EndArray();
    }
    w.Key("sources");
    w.StartArray();
    for (const auto& s : c.sources) {
      w.StartObject();
      write_pair(w, "url", s.url);
      write_pair(w, "title", s.title);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string cases_as_text(const CaseLibrary& library) {
  std::string out;
  for (const auto& c : library.cases()) {
    out += c.id + "  (" + c.date + ", " + c.organisation + ")\n  " + c.title + "\n  checks:";
    for (const auto& check : c.checks) out += " " + check;
    out += "\n";
    for (const auto& s : c.sources) out += "  source: " + s.url + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace kubegap
