#include "webhook/core/cluster_state_file.h"

#include "webhook/core/file_io.h"
#include "webhook/core/json_reader.h"
#include "webhook/core/object_decoder.h"

namespace kubegap {

std::shared_ptr<const ClusterSnapshot> parse_cluster_state(std::string_view text, const std::string& source) {
  LoadedObjects loaded;
  load_objects(text, source, loaded);
  // The server's own configuration: the first problem stops it, naming file and line.
  if (!loaded.problems.empty()) throw ConfigError(loaded.problems.front().text());
  std::vector<DisruptionBudget> budgets;
  std::vector<NodeInfo> nodes;
  std::vector<ResourceClaimInfo> claims;
  for (const KubeObject& object : loaded.objects) {
    JsonReader reader;
    const JsonPath root{nullptr, object.kind};
    if (object.kind == "PodDisruptionBudget") {
      budgets.push_back(decode_disruption_budget(reader, *object.json, root));
    } else if (object.kind == "Node") {
      nodes.push_back(decode_node(reader, *object.json, root));
    } else if (is_resource_claim(object.api_version, object.kind)) {
      claims.push_back(decode_resource_claim(reader, *object.json, root));
    }
    if (!reader.ok()) {
      throw ConfigError(InputProblem{source, object.field_line(reader.error(), object.kind), reader.error()}.text());
    }
  }
  return std::make_shared<const ClusterSnapshot>(std::move(budgets), std::move(nodes), std::move(claims));
}

std::shared_ptr<const ClusterSnapshot> load_cluster_state_file(const std::string& path) {
  return parse_cluster_state(read_file(path), path);
}

}  // namespace kubegap
