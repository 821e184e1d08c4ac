#pragma once
// Restart knobs: what restart-on-failure reads from a workload object, found where its
// workload-table row says (RestartRow in policies/policy.h). The object's own knobs are
// read once; a part's knobs come from the value that holds its pod template (a JobSet's
// child Job spec, a Kubeflow replica, a Volcano task).
//
//   RestartKnobs knobs = decode_object_restart(reader, object, path, row.restart);
//   decode_part_restart(reader, replica, replica_path, row.restart, knobs);

#include <rapidjson/document.h>

#include <string_view>

#include "policies/pod_view.h"
#include "policies/policy.h"
#include "webhook/core/json_reader.h"

namespace kubegap {

// decode_object_restart: the budget, per-index budget and rules at the row's paths.
RestartKnobs decode_object_restart(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path,
                                   const RestartRow& row);

// decode_part_restart: the part's own knobs, read from `holder` (the value whose
// `template` member is the part's pod template) into `out`.
void decode_part_restart(JsonReader& reader, const rapidjson::Value& holder, const JsonPath& path,
                         const RestartRow& row, RestartKnobs& out);

// template_holder_path: `template_path` without its last segment when that segment is a
// plain field ("spec.replicatedJobs[name].template.spec.template" ->
// "spec.replicatedJobs[name].template.spec"); nullopt when the template is not held by a
// field of a value of its own (a Pod is its own template).
std::optional<std::string_view> template_holder_path(std::string_view template_path);

}  // namespace kubegap
