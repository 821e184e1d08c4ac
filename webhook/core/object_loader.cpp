#include "webhook/core/object_loader.h"

#include <algorithm>

namespace kubegap {
namespace {

std::string string_member(const rapidjson::Value& object, const char* name) {
  const auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsString()
             ? std::string(it->value.GetString(), it->value.GetStringLength())
             : std::string();
}

const rapidjson::Value* object_member(const rapidjson::Value& object, const char* name) {
  const auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsObject() ? &it->value : nullptr;
}

// ObjectCollector: the Kubernetes objects of one document: Lists expanded, an
// AdmissionReview replaced by its request.object.
class ObjectCollector {
 public:
  ObjectCollector(const std::string& file, std::shared_ptr<const YamlDocument> document, LoadedObjects& out)
      : file_(file), document_(std::move(document)), out_(out) {}

  void add(const rapidjson::Value& value, const std::string& path, const std::string& implied_api_version,
           const std::string& implied_kind, int depth) {
    const int line = line_at(path);
    if (!value.IsObject()) return problem(line, "expected a Kubernetes object");
    std::string api_version = string_member(value, "apiVersion");
    std::string kind = string_member(value, "kind");
    if (api_version.empty()) api_version = implied_api_version;
    if (kind.empty()) kind = implied_kind;
    const auto items = value.FindMember("items");
    if (kind.ends_with("List") && items != value.MemberEnd() && !items->value.IsNull()) {
      return add_items(items->value, path, api_version, kind, depth);
    }
    if (kind == "AdmissionReview") return add_review_object(value, path, depth);
    out_.objects.push_back({file_, line, std::move(api_version), std::move(kind), document_, &value, path});
  }

 private:
  int line_at(const std::string& path) const { return field_line(document_->field_lines, path); }
  void problem(int line, std::string message) { out_.problems.push_back({file_, line, std::move(message)}); }

  // add_items: a `List` (kubectl get -o yaml) or a typed `<Kind>List`, whose items the API
  // server sends without apiVersion and kind: they take the list's.
  void add_items(const rapidjson::Value& items, const std::string& path, const std::string& api_version,
                 const std::string& kind, int depth) {
    const std::string items_path = member_path(path, "items");
    // Lists in Lists are legal but never deep; deeper is abuse.
    if (depth >= kMaxDepth) return problem(line_at(items_path), kind + ": Lists nested too deeply");
    if (!items.IsArray()) return problem(line_at(items_path), kind + ".items: expected an array");
    const bool typed = kind != "List";
    const std::string item_kind = typed ? kind.substr(0, kind.size() - 4) : std::string();
    const std::string item_api_version = typed ? api_version : std::string();
    for (rapidjson::SizeType i = 0; i < items.Size(); ++i) {
      add(items[i], index_path(items_path, i), item_api_version, item_kind, depth + 1);
    }
  }

  // add_review_object: a captured AdmissionReview stands for the object it carries.
  void add_review_object(const rapidjson::Value& review, const std::string& path, int depth) {
    const rapidjson::Value* request = object_member(review, "request");
    const rapidjson::Value* object = request != nullptr ? object_member(*request, "object") : nullptr;
    if (object == nullptr) return problem(line_at(path), "AdmissionReview without request.object");
    if (depth >= kMaxDepth) return problem(line_at(path), "AdmissionReviews nested too deeply");
    add(*object, member_path(member_path(path, "request"), "object"), {}, {}, depth + 1);
  }

  static constexpr int kMaxDepth = 8;
  const std::string& file_;
  std::shared_ptr<const YamlDocument> document_;
  LoadedObjects& out_;
};

}  // namespace

int KubeObject::field_line(std::string_view error, std::string_view root) const {
  if (!error.starts_with(root)) return line;
  std::string_view rest = error.substr(root.size());
  if (rest.starts_with('.')) rest.remove_prefix(1);
  // The path ends at the ": " before the message. A member name may hold ": " too, so
  // the first cut that names a recorded field wins; else the first cut's nearest ancestor.
  const FieldLines& lines = document->field_lines;
  for (auto cut = rest.find(": "); cut != std::string_view::npos; cut = rest.find(": ", cut + 1)) {
    if (const auto it = lines.find(join_path(path, rest.substr(0, cut))); it != lines.end()) return it->second;
  }
  const int found = kubegap::field_line(lines, join_path(path, rest.substr(0, rest.find(": "))));
  return found > 0 ? found : line;
}

void load_objects(std::string_view text, const std::string& file, LoadedObjects& out) {
  ParsedYaml parsed = parse_yaml_text(text, file);
  const std::size_t first_problem = out.problems.size();
  out.problems.insert(out.problems.end(), parsed.problems.begin(), parsed.problems.end());
  for (auto& document : parsed.documents) {
    auto shared = std::make_shared<const YamlDocument>(std::move(document));
    ObjectCollector(file, shared, out).add(shared->json, "", {}, {}, 0);
  }
  // Problems of reading and of collecting, in the order of their lines.
  std::stable_sort(out.problems.begin() + static_cast<std::ptrdiff_t>(first_problem), out.problems.end(),
                   [](const InputProblem& a, const InputProblem& b) { return a.line < b.line; });
}

}  // namespace kubegap
