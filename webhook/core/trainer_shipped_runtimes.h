#pragma once
// The ClusterTrainingRuntimes Kubeflow Trainer ships (manifests/base/runtimes at v2.3.0;
// v2.0.0's mpi-distributed too), described by the fields kubegap's checks read, so that
// offline `check` can judge a TrainJob that names one without the runtime in its input.
// Not copies of the upstream manifests: the replicated jobs, their containers, the
// trainer-step label, volumes and claim templates, as docs/trainjob-resolution.md
// ("What the shipped runtimes hold") records them.
//
//   if (const auto* json = shipped_trainer_runtime("torch-distributed")) ...   // JSON text
//
// A live cluster's runtimes are never replaced by these: `serve` and `scan` judge with
// what the cluster holds, since a platform team may have changed a shipped runtime.

#include <string_view>

namespace kubegap {

inline constexpr std::string_view kShippedRuntimesVersion = "Kubeflow Trainer v2.3.0";

// shipped_trainer_runtime: the JSON of the ClusterTrainingRuntime `name` as Trainer ships
// it; nullptr for a name Trainer does not ship.
const std::string_view* shipped_trainer_runtime(std::string_view name);

}  // namespace kubegap
