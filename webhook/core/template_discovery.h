#pragma once
// Pod templates of a kind the workload table does not list. Operators nobody has written
// a row for yet (AdaptDL's AdaptDLJob, et-operator's TrainingJob, TensorStack's jobs)
// keep their pods as PodTemplateSpecs under `spec`, like every kind that has a row. With
// policy `judgeUnlistedKinds` (the default), `check` finds them by that shape and judges
// the object like a Job: each pod template on the evidence of its own command, env and
// resources, with no roles, controller labels or restart budget, because nothing says
// what that controller does. A row in `workloadKinds` always outranks this.
//
//   if (auto row = discover_kind(object, "adaptdl.petuum.com", "AdaptDLJob")) {
//     evaluate_object(object, ..., *row, ...);   // row->templates: spec.template
//   }
//
// Pure and bounded: at most kMaxDiscoveryDepth levels and kMaxDiscoveryVisits values are
// looked at, whatever the object holds.

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "policies/policy.h"

namespace kubegap {

constexpr int kMaxDiscoveryDepth = 8;
constexpr std::size_t kMaxDiscoveryVisits = 10000;

// discover_kind: a row (workload class auto) whose templates are the pod templates found
// under the object's `spec`: objects whose `spec.containers` is a list of objects. None
// when there are none: the object is then not a workload (a ConfigMap, a Service). Its
// entrypoints are the lists of strings outside those templates named like a command
// (`spec.worker.cmd`, `spec.config.run.python`): what the job runs when its containers
// run their image's entrypoint.
std::optional<WorkloadKind> discover_kind(const rapidjson::Value& object, const std::string& group,
                                          const std::string& kind);

// command_program: the program a command list's name says runs it ("python" for
// `spec.config.run.python`), or empty (`spec.worker.cmd` names its program first).
std::string_view command_program(std::string_view path);

// discovery_note: what a report says of such an object, naming where its pods came from.
std::string discovery_note(const WorkloadKind& row);

}  // namespace kubegap
