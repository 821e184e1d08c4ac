#pragma once
// One object (a Pod or a workload) through the checks, from its JSON: what the webhook,
// `check`, `scan` and the background audit all do with an object, in one place.
//
//   ObjectEvaluation e = evaluate_object(json, "request.object", *row, "default",
//                                        snapshot.get(), policy, "");
//   if (!e.error.empty()) ...; for (const Finding& f : e.findings) ...

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/evaluate.h"
#include "policies/finding.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

// ObjectEvaluation: one object (a Pod or a workload) through the engine: its view, the
// findings, or why it could not be read. Shared by the webhook and `check`.
struct ObjectEvaluation {
  WorkloadView object;
  std::vector<Finding> findings;
  std::vector<PartVerdict> parts;  // how each pod spec was classified
  std::string error;               // a type error, with its JSON path; findings are empty then
  // Where the judged pod templates came from, for `check --explain` (a TrainJob: the
  // runtime it resolved and which fields the TrainJob set); empty for other kinds.
  std::vector<std::string> provenance = {};
};

// evaluate_object: decodes `json` (an object of kind `row`) and evaluates its pod specs.
// A row with `resolve: trainerRuntime` (TrainJob) is first resolved against its runtime,
// found in `claims` (the objects known besides the cluster view: `check`'s input) or
// `cluster`; without it, the checks the runtime decides are not evaluated.
ObjectEvaluation evaluate_object(const rapidjson::Value& json, std::string_view json_path, const WorkloadKind& row,
                                 std::string_view default_namespace, const ClusterSnapshot* cluster,
                                 const Policy& policy, std::string_view cluster_unavailable,
                                 const ClusterSnapshot* claims = nullptr, std::vector<std::string> notes = {});

}  // namespace kubegap
