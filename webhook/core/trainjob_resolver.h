#pragma once
// TrainJob resolution: the JobSet a Kubeflow Trainer v2 TrainJob (trainer.kubeflow.org/
// v1alpha1) becomes. The Trainer controller copies its runtime's `spec.template` (a JobSet
// template), applies the TrainJob's overrides and `spec.trainer` / `spec.initializer`
// fields to it, and creates a JobSet named after the TrainJob. This file does the same in
// memory, so the JobSet row's checks can judge a TrainJob before any pod exists. The rules,
// with the upstream file for each, are in docs/trainjob-resolution.md (Trainer v2.3.0).
//
//   const RuntimeRef ref = runtime_ref(trainjob);     // ClusterTrainingRuntime/torch-distributed
//   const rapidjson::Value* runtime = ...;            // the caller reads it (cluster, files)
//   TrainJobResolution r = runtime != nullptr ? resolve_trainjob(trainjob, *runtime)
//                                             : resolve_trainjob_without_runtime(trainjob);
//   if (!r.error.empty()) ...;                        // "spec.trainer.numNodes: expected an integer"
//   evaluate_object(r.object, ...);                   // spec.replicatedJobs[name].template.spec.template
//
// Pure: no I/O, no logging, no clock. Hostile input gives an error, never an exception:
// values of the wrong type, nesting deeper than 100 levels, or copying more than a million
// values (overrides that each target many jobs) are errors with their JSON path.

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

inline constexpr std::string_view kTrainerApiGroup = "trainer.kubeflow.org";
inline constexpr std::string_view kClusterTrainingRuntimeKind = "ClusterTrainingRuntime";
inline constexpr std::string_view kTrainingRuntimeKind = "TrainingRuntime";

// RuntimeRef: the runtime a TrainJob names. A TrainingRuntime is read from the TrainJob's
// namespace; a ClusterTrainingRuntime is cluster-scoped.
struct RuntimeRef {
  std::string api_group;  // spec.runtimeRef.apiGroup; "trainer.kubeflow.org" by default
  std::string kind;       // spec.runtimeRef.kind; "ClusterTrainingRuntime" by default
  std::string name;       // spec.runtimeRef.name; empty when absent or not a string
};

// runtime_ref: spec.runtimeRef of `trainjob`, with the API's defaults filled in. Never
// fails: a missing or mistyped reference gives an empty name.
RuntimeRef runtime_ref(const rapidjson::Value& trainjob);

// TrainJobResolution: the JobSet, where its parts came from, or why it could not be built.
struct TrainJobResolution {
  // {"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":<the TrainJob's
  // metadata>,"spec":<the runtime's spec.template.spec with the TrainJob applied>}; an
  // empty object when `error` is set. Its strings are copies: it outlives its inputs.
  rapidjson::Document object;
  // provenance: lines for `check --explain`, at most 64 and a count of the rest, e.g.
  // "replicatedJob node, container node: image, command from TrainJob spec.trainer".
  std::vector<std::string> provenance;
  // error: "<JSON path>: <what>"; paths into the runtime start with "runtime.".
  std::string error;
};

// resolve_trainjob: the JobSet the Trainer controller would build from `trainjob` and
// `runtime` (the ClusterTrainingRuntime or TrainingRuntime object). The runtime is taken
// as given: the caller checks that it is the one runtime_ref() names.
TrainJobResolution resolve_trainjob(const rapidjson::Value& trainjob, const rapidjson::Value& runtime);

// resolve_trainjob_without_runtime: the same over a stand-in runtime (one replicatedJob
// "node", the trainer step, with one container "node"), for when the runtime cannot be
// read: what the TrainJob alone sets (a zone nodeSelector, a PVC patched in) can still be
// judged. Jobs the TrainJob's overrides name are created, since the real runtime may have them.
TrainJobResolution resolve_trainjob_without_runtime(const rapidjson::Value& trainjob);

}  // namespace kubegap
