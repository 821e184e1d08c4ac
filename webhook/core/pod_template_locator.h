#pragma once
// PodTemplateLocator: finds the pod templates of a workload object, following the
// locations of its WorkloadKind row (policies/policy.h; paths in webhook/core/template_path.h),
// and decodes each into a PodSpecView with its part name, the labels its controller will
// add, and the volumes its controller will add (claim templates, job-level volumes).
//
//   WorkloadView view;  // meta already decoded
//   locate_pod_templates(reader, object_json, path, *policy.workload_kind("batch", "Job"), view);

#include <rapidjson/document.h>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "policies/policy.h"
#include "webhook/core/json_reader.h"
#include "webhook/core/template_path.h"

namespace kubegap {

// `policy` finds the rows of wrapped objects (WorkloadKind::wraps); without it, wrapped
// objects are not followed. `depth` counts the wrappers already entered. `known` holds the
// Trainer runtimes a wrapped TrainJob (a Katib trial) is resolved with.
void locate_pod_templates(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path,
                          const WorkloadKind& kind, WorkloadView& out, const Policy* policy = nullptr, int depth = 0,
                          const ClusterSnapshot* known = nullptr);

}  // namespace kubegap
