#pragma once
// PodTemplateLocator: finds the pod templates of a workload object, following the
// locations of its WorkloadKind row (policies/policy.h), and decodes each into a
// PodSpecView with its part name and the labels its controller will add.
//
//   WorkloadView view;  // meta already decoded
//   locate_pod_templates(reader, object_json, *policy.workload_kind("batch", "Job"), view);

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "policies/policy.h"
#include "policies/pod_view.h"
#include "webhook/json_reader.h"

namespace kubegap {

void locate_pod_templates(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path,
                          const WorkloadKind& kind, WorkloadView& out);

// validate_template_path: empty when `path` is well formed, else what is wrong with it.
std::string validate_template_path(std::string_view path);

}  // namespace kubegap
