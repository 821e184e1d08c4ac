#include "webhook/pod_template_locator.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "webhook/object_decoder.h"

namespace kubegap {
namespace {

using rapidjson::Value;

// Segment: one step of a template path: `field`, `field[key]` or `*`.
struct Segment {
  std::string_view field;  // "*" for every member
  std::string_view key;    // for `field[key]`: the element member that labels it
  bool array = false;
};

Segment parse_segment(std::string_view text) {
  Segment segment{text, {}, false};
  if (const auto open = text.find('['); open != std::string_view::npos && text.back() == ']') {
    segment.field = text.substr(0, open);
    segment.key = text.substr(open + 1, text.size() - open - 2);
    segment.array = true;
  }
  return segment;
}

std::string render(std::string_view pattern, const std::string& label, const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 2) == "{}") {
      out += label;
      i += 2;
    } else if (pattern.substr(i, 7) == "{lower}") {
      for (const char c : label) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      i += 7;
    } else if (pattern.substr(i, 6) == "{name}") {
      out += name;
      i += 6;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

struct Walk {
  JsonReader& reader;
  const WorkloadKind& kind;
  const PodTemplateLocation& location;
  WorkloadView& out;

  void add_controller_labels(PodSpecView& pod, const std::string& label) const {
    // generateName objects have no name yet ("x-*"): their name-based labels are unknown.
    const bool named = !out.name.empty() && out.name.back() != '*';
    for (const auto* labels : {&kind.pod_labels, &location.pod_labels}) {
      for (const auto& [key, pattern] : *labels) {
        if (!named && pattern.find("{name}") != std::string::npos) continue;
        pod.labels.insert_or_assign(key, render(pattern, label, out.name));
      }
    }
  }

  // add_claim_volumes: the StatefulSet controller gives every pod a persistentVolumeClaim
  // volume per entry of volumeClaimTemplates (replacing a template volume of the same
  // name), so its template mounts volumes it does not declare. Claim templates kept next
  // to a pod template (in `holder`) are read that way for any kind.
  void add_claim_volumes(PodSpecView& pod, const Value& holder, const JsonPath& holder_path) const {
    const JsonPath claims_path{&holder_path, "volumeClaimTemplates"};
    std::set<std::string> claims;
    reader.each(JsonReader::member(&holder, "volumeClaimTemplates"), claims_path,
                [&](const Value& claim, const JsonPath& claim_path) {
                  if (reader.object(&claim, claim_path) == nullptr) return;
                  const JsonPath meta_path{&claim_path, "metadata"};
                  const Value* meta = reader.object(JsonReader::member(&claim, "metadata"), meta_path);
                  std::string name = reader.string(JsonReader::member(meta, "name"), JsonPath{&meta_path, "name"});
                  if (!name.empty()) claims.insert(std::move(name));
                });
    if (claims.empty()) return;
    // One pass, not one per claim: thousands of claims must not cost n^2.
    std::erase_if(pod.volumes, [&](const Volume& v) { return claims.contains(v.name); });
    for (const auto& name : claims) pod.volumes.push_back(Volume{name, "persistentVolumeClaim", ""});
  }

  // step: follows `rest` from `value`; `label` is the last wildcard's label; `holder` is
  // the object whose member `value` is (nullptr for the root and array elements).
  void step(const Value& value, std::string_view rest, const JsonPath& path, const std::string& label,
            const Value* holder = nullptr, const JsonPath* holder_path = nullptr) {
    if (!reader.ok()) return;
    if (rest.empty()) {
      PodSpecView pod = decode_pod_template(reader, value, path);
      if (holder != nullptr && holder_path != nullptr) add_claim_volumes(pod, *holder, *holder_path);
      pod.part = render(location.part, label, out.name);
      add_controller_labels(pod, label);
      out.pods.push_back(std::move(pod));
      return;
    }
    const auto dot = rest.find('.');
    const Segment segment = parse_segment(rest.substr(0, dot));
    const std::string_view next = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    if (reader.object(&value, path) == nullptr) return;
    if (segment.field == "*") {
      for (const auto& member : value.GetObject()) {
        const std::string name(member.name.GetString(), member.name.GetStringLength());
        if (member.value.IsNull()) continue;
        step(member.value, next, JsonPath{&path, name}, name, &value, &path);
      }
      return;
    }
    const Value* child = JsonReader::member(&value, segment.field);
    if (child == nullptr) return;  // this template is absent: nothing to evaluate
    const JsonPath child_path{&path, segment.field};
    if (!segment.array) return step(*child, next, child_path, label, &value, &path);
    reader.each(child, child_path, [&](const Value& element, const JsonPath& element_path) {
      std::string element_label = reader.string(JsonReader::member(&element, segment.key),
                                                JsonPath{&element_path, segment.key});
      if (element_label.empty()) element_label = std::to_string(element_path.index);
      step(element, next, element_path, element_label);
    });
  }
};

}  // namespace

void locate_pod_templates(JsonReader& reader, const Value& object, const JsonPath& path,
                          const WorkloadKind& kind, WorkloadView& out) {
  for (const auto& location : kind.templates) {
    Walk{reader, kind, location, out}.step(object, location.path, path, "");
  }
}

std::string validate_template_path(std::string_view path) {
  if (path.empty()) return {};
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string_view text = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (text.empty()) return "empty segment in \"" + std::string(path) + "\"";
    const Segment segment = parse_segment(text);
    const auto bad = [](std::string_view s) {
      return s.empty() || std::any_of(s.begin(), s.end(), [](char c) {
               return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
             });
    };
    if (segment.field != "*" && (bad(segment.field) || (segment.array && bad(segment.key)))) {
      return "segment \"" + std::string(text) + "\" is not field, field[key] or *";
    }
    if (dot == std::string_view::npos) return {};
    start = dot + 1;
  }
}

}  // namespace kubegap
