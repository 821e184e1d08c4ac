#include "webhook/core/object_evaluation.h"

#include "webhook/core/object_decoder.h"
#include "webhook/core/pod_template_locator.h"

namespace kubegap {

ObjectEvaluation evaluate_object(const rapidjson::Value& json, std::string_view json_path, const WorkloadKind& row,
                                 const std::string& default_namespace, const ClusterSnapshot* cluster,
                                 const Policy& policy, std::string_view cluster_unavailable,
                                 const ClusterSnapshot* claims) {
  ObjectEvaluation out;
  JsonReader reader;
  out.object.api_group = row.group;
  out.object.kind = row.kind;
  const JsonPath path{nullptr, json_path};
  decode_object_meta(reader, json, path, out.object);
  if (out.object.namespace_name.empty()) out.object.namespace_name = default_namespace;
  locate_pod_templates(reader, json, path, row, out.object);
  if (!reader.ok()) {
    out.error = reader.error();
    return out;
  }
  Evaluation evaluation = evaluate_object_view(out.object, cluster, policy, cluster_unavailable, claims);
  out.findings = std::move(evaluation.findings);
  out.parts = std::move(evaluation.parts);
  return out;
}

}  // namespace kubegap
