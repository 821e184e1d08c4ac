#include "webhook/core/review_handler.h"

#include <algorithm>
#include <span>

#include "policies/evaluate.h"
#include "policies/text.h"
#include "webhook/core/admission_codec.h"
#include "webhook/core/object_decoder.h"
#include "webhook/core/object_evaluation.h"

namespace kubegap {
namespace {

// workload_row: the policy's row for this request, when its kind and operation are
// evaluated (subresources such as pods/status never are).
const WorkloadKind* workload_row(const AdmissionRequest& request, const Policy& policy) {
  if (!request.sub_resource.empty()) return nullptr;
  const WorkloadKind* row = policy.workload_kind(request.group, request.kind);
  if (row == nullptr ||
      std::find(row->operations.begin(), row->operations.end(), request.operation) == row->operations.end()) {
    return nullptr;
  }
  return row;
}

AdmissionResponse to_response(const std::vector<Finding>& findings, std::vector<std::string_view>& found) {
  AdmissionResponse response;
  // Room for an annotation per finding and "class", and for a warning and a fix line each:
  // the vectors are allocated once.
  response.audit_annotations.reserve(findings.size() + 1);
  response.warnings.reserve(2 * findings.size());
  // Findings of one check are adjacent (evaluate's order): one annotation per check.
  for (auto first = findings.begin(); first != findings.end();) {
    const auto last = std::find_if(first, findings.end(), [&](const Finding& f) { return f.check != first->check; });
    for (auto it = first; it != last; ++it) {
      if (!warns(*it)) continue;  // exempt, not evaluated, or the check's action is audit
      append_warnings(*it, response.warnings);
      if (std::find(found.begin(), found.end(), it->check) == found.end()) found.push_back(it->check);
    }
    response.audit_annotations.emplace_back(
        first->check, format_annotation(std::span<const Finding>(&*first, static_cast<std::size_t>(last - first))));
    first = last;
  }
  return response;
}

AdmissionResponse error_response(std::string_view reason) {
  AdmissionResponse response;
  // Bounded like every other annotation value: the reason can quote a hostile member name.
  response.audit_annotations.emplace_back(
      "error", truncate_runes(sanitize_text("not evaluated: " + std::string(reason)), kMaxAnnotationValueBytes / 4));
  return response;
}

}  // namespace

ReviewResult ReviewHandler::handle(std::string_view body, const ReserveKept& reserve) const {
  ReviewResult result;
  DecodedReview decoded = decoder_(body, reserve);
  if (decoded.status == DecodedReview::Status::kOverBudget) {
    result.status = 503;
    result.error = decoded.error;
    result.body = encode_error(decoded.error);
    return result;
  }
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
  const auto policy = policies_.get();
  const bool unreadable = decoded.status == DecodedReview::Status::kUnreadableRequest;
  const WorkloadKind* const row = unreadable ? nullptr : workload_row(request, *policy);
  if (unreadable) {
    result.error = decoded.error;
  } else if (row == nullptr) {
    // Not ours to judge: allowed, nothing to say.
  } else if (request.object == nullptr || !request.object->IsObject()) {
    result.error = "request.object is missing or not an object";
  } else {
    const auto snapshot = cluster_.snapshot();
    ObjectEvaluation evaluation = evaluate_object(*request.object, "request.object", *row, request.namespace_name,
                                                  snapshot.get(), *policy, cluster_.unavailable_reason());
    if (result.name.empty()) result.name = evaluation.object.name;
    if (!evaluation.error.empty()) {
      result.error = std::move(evaluation.error);
    } else {
      response = to_response(evaluation.findings, result.found);
      // The class each part was judged as, and why: reviewers see why a check was quiet.
      if (std::string classes = describe_classes(evaluation.parts); !classes.empty()) {
        response.audit_annotations.emplace_back("class",
                                                truncate_runes(sanitize_text(classes), kMaxAnnotationValueBytes / 4));
      }
      result.evaluated = true;
    }
  }
  if (!result.error.empty()) response = error_response(result.error);
  result.body = encode_response(request.api_version, request.uid, response);
  return result;
}

}  // namespace kubegap
