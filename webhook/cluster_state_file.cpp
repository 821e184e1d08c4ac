#include "webhook/cluster_state_file.h"

#include "webhook/json_reader.h"
#include "webhook/object_decoder.h"

namespace kubegap {
namespace {

std::string_view string_member(const rapidjson::Value& object, std::string_view name) {
  const rapidjson::Value* v = JsonReader::member(&object, name);
  return v != nullptr && v->IsString() ? std::string_view(v->GetString(), v->GetStringLength())
                                       : std::string_view();
}

struct Collector {
  std::vector<DisruptionBudget> budgets;
  std::vector<NodeInfo> nodes;
  std::string source;

  // implied_kind: the item kind of the enclosing typed list ("PodDisruptionBudget" in a
  // PodDisruptionBudgetList), whose items the API server sends without a kind.
  void add(const rapidjson::Value& object, int line, std::string_view implied_kind = {}) {
    if (!object.IsObject()) {
      throw ConfigError(source + ":" + std::to_string(line) + ": expected a Kubernetes object");
    }
    std::string_view kind = string_member(object, "kind");
    if (kind.empty()) kind = implied_kind;
    JsonReader reader;
    const JsonPath root{nullptr, kind};
    if (kind.ends_with("List")) {  // `List` (kubectl get -o yaml) or a typed `<Kind>List`
      const std::string_view item_kind = kind.substr(0, kind.size() - 4);
      reader.each(JsonReader::member(&object, "items"), JsonPath{&root, "items"},
                  [&](const rapidjson::Value& item, const JsonPath&) { add(item, line, item_kind); });
    } else if (kind == "PodDisruptionBudget") {
      budgets.push_back(decode_disruption_budget(reader, object, root));
    } else if (kind == "Node") {
      nodes.push_back(decode_node(reader, object, root));
    }
    if (!reader.ok()) throw ConfigError(source + ":" + std::to_string(line) + ": " + reader.error());
  }
};

}  // namespace

std::shared_ptr<const ClusterSnapshot> parse_cluster_state(std::string_view text,
                                                           const std::string& source) {
  Collector collector{{}, {}, source};
  for (const auto& document : load_yaml_documents(text, source)) {
    collector.add(document.json, document.line);
  }
  return std::make_shared<const ClusterSnapshot>(std::move(collector.budgets),
                                                 std::move(collector.nodes));
}

std::shared_ptr<const ClusterSnapshot> load_cluster_state_file(const std::string& path) {
  return parse_cluster_state(read_file(path), path);
}

}  // namespace kubegap
