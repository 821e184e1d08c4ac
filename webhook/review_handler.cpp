#include "webhook/review_handler.h"

#include <algorithm>
#include <functional>

#include "policies/evaluate.h"
#include "policies/text.h"
#include "webhook/admission_codec.h"
#include "webhook/object_decoder.h"

namespace kubegap {
namespace {

// PodSpecSource: which requests carry pod specs and where they are. One row per kind;
// workload kinds (Job, PyTorchJob, JobSet, ...) slot in here as rows.
struct PodSpecSource {
  std::string_view group;
  std::string_view kind;
  std::vector<std::string_view> operations;
  bool training_kind;
  std::function<void(JsonReader&, const rapidjson::Value&, const JsonPath&, WorkloadView&)> locate;
};

void locate_pod(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path,
                WorkloadView& out) {
  out.pods.push_back(decode_pod_template(reader, object, path));
}

const std::vector<PodSpecSource>& pod_spec_sources() {
  static const std::vector<PodSpecSource> kSources = {
      {"", "Pod", {"CREATE"}, false, locate_pod},
  };
  return kSources;
}

const PodSpecSource* find_source(const AdmissionRequest& request) {
  if (!request.sub_resource.empty()) return nullptr;  // pods/status, pods/binding, ...
  for (const auto& source : pod_spec_sources()) {
    if (source.group == request.group && source.kind == request.kind &&
        std::find(source.operations.begin(), source.operations.end(), request.operation) !=
            source.operations.end()) {
      return &source;
    }
  }
  return nullptr;
}

AdmissionResponse to_response(const std::vector<Finding>& findings, std::vector<std::string>& found) {
  AdmissionResponse response;
  for (const auto& finding : findings) {
    if (finding.outcome == Outcome::kFinding) {
      response.warnings.push_back(format_warning(finding));
      found.push_back(finding.check);
    }
    response.audit_annotations.emplace(finding.check, format_annotation(finding));
  }
  return response;
}

AdmissionResponse error_response(std::string_view reason) {
  AdmissionResponse response;
  // Bounded like every other annotation value: the reason can quote a hostile member name.
  response.audit_annotations.emplace(
      "error", truncate_runes(sanitize_text("not evaluated: " + std::string(reason)),
                              kMaxAnnotationValueBytes / 4));
  return response;
}

}  // namespace

ReviewResult ReviewHandler::handle(std::string_view body) const {
  ReviewResult result;
  DecodedReview decoded = decode_review(body);
  if (decoded.status == DecodedReview::Status::kNotAReview) {
    result.status = 400;
    result.error = decoded.error;
    result.body = encode_error("not an AdmissionReview: " + decoded.error);
    return result;
  }
  const AdmissionRequest& request = decoded.request;
  result.uid = request.uid;
  result.kind = request.kind;
  result.namespace_name = request.namespace_name;
  result.name = request.name;
  result.operation = request.operation;

  AdmissionResponse response;
  const PodSpecSource* source = nullptr;
  if (decoded.status == DecodedReview::Status::kUnreadableRequest) {
    result.error = decoded.error;
  } else if ((source = find_source(request)) == nullptr) {
    // Not ours to judge: allowed, nothing to say.
  } else if (request.object == nullptr || !request.object->IsObject()) {
    result.error = "request.object is missing or not an object";
  } else {
    JsonReader reader;
    WorkloadView object;
    object.api_group = std::string(source->group);
    object.kind = std::string(source->kind);
    object.training_kind = source->training_kind;
    const JsonPath object_path{nullptr, "request.object"};
    decode_object_meta(reader, *request.object, object_path, object);
    if (object.namespace_name.empty()) object.namespace_name = request.namespace_name;
    if (result.name.empty()) result.name = object.name;
    source->locate(reader, *request.object, object_path, object);
    if (!reader.ok()) {
      result.error = reader.error();
    } else {
      const auto policy = policies_.get();
      const auto snapshot = cluster_.snapshot();
      const auto findings =
          evaluate(object, snapshot.get(), *policy, cluster_.unavailable_reason());
      response = to_response(findings, result.found);
      result.evaluated = true;
    }
  }
  if (!result.error.empty()) response = error_response(result.error);
  result.body = encode_response(request.api_version, request.uid, response);
  return result;
}

}  // namespace kubegap
