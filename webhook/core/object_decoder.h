#pragma once
// Decoders from Kubernetes objects (RapidJSON values) to the plain views the checks read.
// Shared by the admission path, the cluster-state file and, later, the watch client and
// the offline command. Type errors are reported through the JsonReader, never thrown.

#include <rapidjson/document.h>

#include <string_view>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "webhook/core/json_reader.h"

namespace kubegap {

// decode_pod_template: a value shaped like a Pod or a PodTemplateSpec ({metadata, spec}).
PodSpecView decode_pod_template(JsonReader& reader, const rapidjson::Value& value, const JsonPath& path);

// decode_object_meta: metadata.namespace, name (or generateName), labels, annotations.
void decode_object_meta(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path, WorkloadView& out);

// decode_label_selector: a metav1.LabelSelector; nullopt for a missing or null selector.
std::optional<LabelSelector> decode_label_selector(JsonReader& reader, const rapidjson::Value* value,
                                                   const JsonPath& path);

DisruptionBudget decode_disruption_budget(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);
// decode_resource_claim: a resource.k8s.io ResourceClaim or ResourceClaimTemplate (v1,
// v1beta2: requests[].exactly.deviceClassName or firstAvailable[].deviceClassName;
// v1beta1: requests[].deviceClassName).
ResourceClaimInfo decode_resource_claim(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);

// is_resource_claim: a resource.k8s.io ResourceClaim or ResourceClaimTemplate.
inline bool is_resource_claim(std::string_view api_version, std::string_view kind) {
  return api_version.starts_with("resource.k8s.io/") && (kind == "ResourceClaim" || kind == "ResourceClaimTemplate");
}

// QuantityText: how the decoder reads a resource quantity written as a string: `valid`
// when it has a resource.Quantity's syntax (otherwise the object is an input error, "not
// a quantity"), `zero` when it requests nothing. The decoder takes "" (absent) and
// placeholders such as $GPUS (requested) before it. The differential oracle
// (tests/oracle) holds it to resource.ParseQuantity.
struct QuantityText {
  bool valid = false;
  bool zero = false;
};
QuantityText read_quantity_text(std::string_view text);

NodeInfo decode_node(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);

}  // namespace kubegap
