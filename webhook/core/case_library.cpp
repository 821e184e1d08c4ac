#include "webhook/core/case_library.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "policies/checks.h"
#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

class CaseParser {
 public:
  explicit CaseParser(std::string source) : source_(std::move(source)) {}

  Case parse(const YAML::Node& root) const {
    if (!root.IsMap()) fail(root, "(top level)", "expected a mapping");
    static const std::set<std::string> kKeys = {"id",          "title",   "date",   "organisation", "summary",
                                                "key_figures", "lessons", "checks", "sources"};
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
      c.key_figures.push_back(
          {text(figure, "text"), text(figure, "source"), figure["secondary"] && figure["secondary"].as<bool>()});
    }
    for (const auto& lesson : list(root, "lessons")) c.lessons.push_back(lesson.as<std::string>());
    for (const auto& check : list(root, "checks")) {
      if (!check.IsMap()) fail(check, "checks", "each entry needs `id` (a check) and `why` (one line)");
      c.checks.push_back({text(check, "id"), text(check, "why")});
    }
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
void write_pair(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

template <typename Writer>
void write_case(Writer& w, const Case& c) {
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
  w.Key("lessons");
  w.StartArray();
  for (const auto& lesson : c.lessons) w.String(lesson.c_str(), static_cast<rapidjson::SizeType>(lesson.size()));
  w.EndArray();
  w.Key("checks");
  w.StartArray();
  for (const auto& check : c.checks) {
    w.StartObject();
    write_pair(w, "id", check.id);
    write_pair(w, "why", check.why);
    w.EndObject();
  }
  w.EndArray();
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

std::string to_string(const rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

// wrap: `text` in lines of at most `width` columns, the first starting with `indent`,
// the others with `hanging`.
std::string wrap(std::string_view text, std::size_t width, const std::string& first_indent,
                 const std::string& hanging) {
  std::string indent = first_indent;
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
      indent = hanging;
    }
    if (!word.empty()) {
      if (!line.empty()) line += ' ';
      line += word;
    }
    start = end + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
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

const CaseCheck* Case::backs(std::string_view check) const {
  const auto it = std::find_if(checks.begin(), checks.end(), [&](const CaseCheck& c) { return c.id == check; });
  return it == checks.end() ? nullptr : &*it;
}

std::string cases_by_check_text(const CaseLibrary& library, std::string_view check_id) {
  std::string out;
  for (const auto& check : check_registry()) {
    if (!check_id.empty() && check.id != check_id) continue;
    if (!out.empty()) out += "\n";
    out += std::string(check.id) + ": " + std::string(check.summary) + "\n";
    out += wrap("fix: " + std::string(check.remedy), 90, "  ", "       ");
    for (const auto& id : check.cases) {
      const Case* c = library.find(id);
      const CaseCheck* backs = c != nullptr ? c->backs(check.id) : nullptr;
      out += "  " + id + "\n";
      out += wrap(backs != nullptr ? backs->why : "(not in the case library)", 90, "      ", "      ");
    }
  }
  return out;
}

std::string case_as_text(const Case& c) {
  std::string out = c.id + "  (" + c.date + ", " + c.organisation + ")\n" + c.title + "\n\n";
  out += wrap(c.summary, 90, "", "");
  out += "\nWhat the sources say:\n";
  for (const auto& f : c.key_figures) {
    out += wrap("- " + f.text + (f.secondary ? " [secondary]" : ""), 90, "  ", "    ");
    out += "    source: " + f.source + "\n";
  }
  out += "\nOur reading:\n";
  for (const auto& lesson : c.lessons) out += wrap("- " + lesson, 90, "  ", "    ");
  out += "\nBacks:\n";
  for (const auto& check : c.checks) out += wrap("- " + check.id + ": " + check.why, 90, "  ", "    ");
  out += "\nSources:\n";
  for (const auto& s : c.sources) out += "  " + s.url + "\n    " + s.title + "\n";
  return out;
}

std::string cases_as_json(const CaseLibrary& library, std::string_view check_id) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("checks");
  w.StartArray();
  std::set<std::string> cited;
  for (const auto& check : check_registry()) {
    if (!check_id.empty() && check.id != check_id) continue;
    cited.insert(check.cases.begin(), check.cases.end());
    w.StartObject();
    write_pair(w, "id", check.id);
    write_pair(w, "summary", check.summary);
    write_pair(w, "remedy", check.remedy);
    w.Key("cases");
    w.StartArray();
    for (const auto& id : check.cases) {
      const Case* c = library.find(id);
      const CaseCheck* backs = c != nullptr ? c->backs(check.id) : nullptr;
      w.StartObject();
      write_pair(w, "id", id);
      write_pair(w, "why", backs != nullptr ? backs->why : "");
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("cases");
  w.StartArray();
  for (const auto& c : library.cases()) {
    if (check_id.empty() || cited.contains(c.id)) write_case(w, c);
  }
  w.EndArray();
  w.EndObject();
  return to_string(buffer);
}

std::string case_as_json(const Case& c) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  write_case(w, c);
  return to_string(buffer);
}

}  // namespace kubegap
