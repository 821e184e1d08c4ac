#include "webhook/core/template_path.h"

#include <algorithm>
#include <cctype>

namespace kubegap {
namespace {

using rapidjson::Value;

bool bad_name(std::string_view s) {
  return s.empty() || std::any_of(s.begin(), s.end(), [](char c) {
           return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
         });
}

// step: follows `rest` from `value`; `label` is the last labelled segment's label.
void step(JsonReader& reader, const Value& value, std::string_view rest, const JsonPath& path, const std::string& label,
          const TemplateVisitor& visit) {
  if (!reader.ok()) return;
  if (rest.empty()) return visit(value, path, label);
  const auto dot = rest.find('.');
  const TemplatePathSegment segment = parse_template_segment(rest.substr(0, dot));
  const std::string_view next = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  if (reader.object(&value, path) == nullptr) return;
  if (segment.field == "*") {
    for (const auto& member : value.GetObject()) {
      if (member.value.IsNull()) continue;
      const std::string name(member.name.GetString(), member.name.GetStringLength());
      step(reader, member.value, next, JsonPath{&path, name}, name, visit);
    }
    return;
  }
  const Value* child = JsonReader::member(&value, segment.field);
  if (child == nullptr) return;  // absent: nothing down this branch
  const JsonPath child_path{&path, segment.field};
  if (!segment.array) return step(reader, *child, next, child_path, label, visit);
  reader.each(child, child_path, [&](const Value& element, const JsonPath& element_path) {
    std::string element_label;
    if (!segment.key.empty()) {
      element_label = reader.string(JsonReader::member(&element, segment.key), JsonPath{&element_path, segment.key});
    }
    if (element_label.empty()) element_label = std::to_string(element_path.index);
    step(reader, element, next, element_path, element_label, visit);
  });
}

}  // namespace

TemplatePathSegment parse_template_segment(std::string_view text) {
  TemplatePathSegment segment{text, {}, false};
  if (const auto open = text.find('['); open != std::string_view::npos && text.back() == ']') {
    segment.field = text.substr(0, open);
    segment.key = text.substr(open + 1, text.size() - open - 2);
    segment.array = true;
  }
  return segment;
}

std::string validate_template_path(std::string_view path) {
  if (path.empty()) return {};
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string_view text = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (text.empty()) return "empty segment in \"" + std::string(path) + "\"";
    const TemplatePathSegment segment = parse_template_segment(text);
    if (segment.field != "*" && (bad_name(segment.field) || (!segment.key.empty() && bad_name(segment.key)))) {
      return "segment \"" + std::string(text) + "\" is not field, field[key], field[] or *";
    }
    if (dot == std::string_view::npos) return {};
    start = dot + 1;
  }
}

void walk_template_path(JsonReader& reader, const Value& root, const JsonPath& root_path, std::string_view path,
                        const TemplateVisitor& visit) {
  step(reader, root, path, root_path, "", visit);
}

std::vector<TemplatePathSegment> template_path_segments(std::string_view path) {
  std::vector<TemplatePathSegment> out;
  for (std::size_t at = 0; !path.empty() && at <= path.size();) {
    const std::size_t dot = path.find('.', at);
    const std::size_t end = dot == std::string_view::npos ? path.size() : dot;
    out.push_back(parse_template_segment(path.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

}  // namespace kubegap
