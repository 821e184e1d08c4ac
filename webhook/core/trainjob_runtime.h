#pragma once
// Which runtime a TrainJob is judged with, and the JobSet it becomes: the lookup shared by
// a TrainJob reviewed itself (object_evaluation) and one wrapped in a Katib trial
// (pod_template_locator).
//
//   TrainJobBuild b = build_trainjob(json, "ml", snapshot, "no cluster view");
//   if (!b.resolution.error.empty()) ...;  b.missing: why the runtime could not be read.

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "policies/cluster_view.h"
#include "webhook/core/trainjob_resolver.h"

namespace kubegap {

struct TrainJobBuild {
  RuntimeRef ref;
  TrainJobResolution resolution;  // over the runtime, or the stand-in when `missing` is set
  std::string missing;            // "runtime <kind>/<name> not found (...)"; empty when found
  std::string note;               // for the `input` annotation: which runtime judged it
};

// build_trainjob: resolves `trainjob` against its runtime from `known` (the input's or the
// cluster view's RuntimeSet; Trainer's shipped runtimes stand in offline). `unavailable`
// says why there is no view when `known` is nullptr.
TrainJobBuild build_trainjob(const rapidjson::Value& trainjob, const std::string& namespace_name,
                             const ClusterSnapshot* known, std::string_view unavailable);

}  // namespace kubegap
