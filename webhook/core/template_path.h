#pragma once
// The template path grammar: how a workload-table row (policy `workloadKinds`) says where
// a kind keeps its pod templates, PVC claim templates and job-level volumes. Users write
// these paths for their own CRDs, so this is the one place that defines them.
//
//   path     := ""  |  segment ("." segment)*
//   segment  := field           the member `field` of an object
//             | field "[" key "]"   every element of the array `field`, labelled by the
//                               element's string member `key` (its index when absent)
//             | field "[]"      every element of the array `field`, labelled by its index
//             | "*"             every member of an object, labelled by the member's name
//   field, key := [A-Za-z0-9_-]+
//
// The empty path is the object itself (a Pod). The label of the last labelled segment
// fills `{}` in a row's `part` ("replica {}" -> "replica Worker"). Examples:
//   spec.template                                        Job, Deployment
//   spec.pytorchReplicaSpecs.*.template                  PyTorchJob: one per replica type
//   spec.replicatedJobs[name].template.spec.template     JobSet: one per replicated job
//   spec.volumeClaimPolicies[].templates[]               JobSet: every PVC template
// A member that is absent or null ends that branch quietly (the template is optional);
// a member of the wrong type is reported through the JsonReader with its JSON path.
//
//   walk_template_path(reader, object, root_path, "spec.tasks[name].template",
//                      [&](const rapidjson::Value& v, const JsonPath& at, const std::string& label) {...});

#include <rapidjson/document.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/core/json_reader.h"

namespace kubegap {

// TemplatePathSegment: one parsed segment.
struct TemplatePathSegment {
  std::string_view field;  // "*" for every member
  std::string_view key;    // for `field[key]`; empty for `field[]`
  bool array = false;
};

// parse_template_segment: `text` as a segment (not validated: see validate_template_path).
TemplatePathSegment parse_template_segment(std::string_view text);

// template_path_segments: `path` split into its segments (not validated); none for the
// empty path. The views point into `path`.
std::vector<TemplatePathSegment> template_path_segments(std::string_view path);

// validate_template_path: empty when `path` follows the grammar, else what is wrong.
std::string validate_template_path(std::string_view path);

using TemplateVisitor =
    std::function<void(const rapidjson::Value& value, const JsonPath& path, const std::string& label)>;

// walk_template_path: calls `visit` for every value `path` reaches from `root`, in
// document order, with its JSON path and label ("" when no segment labelled it).
void walk_template_path(JsonReader& reader, const rapidjson::Value& root, const JsonPath& root_path,
                        std::string_view path, const TemplateVisitor& visit);

}  // namespace kubegap
