#pragma once
// AdmissionReview on the wire (admission.k8s.io/v1 and v1beta1): decoding the request
// envelope and encoding the response. Facts from k8s.io/api/admission/v1/types.go and
// k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go.

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "webhook/core/review_scan.h"
#include "webhook/core/review_storage.h"

namespace kubegap {

inline constexpr std::string_view kAdmissionV1 = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionV1beta1 = "admission.k8s.io/v1beta1";

// AdmissionRequest: the envelope fields of request; `object` points into `document`.
// Its strings are views into the decoded body, which `storage` keeps: no copies.
struct AdmissionRequest {
  std::string_view api_version;  // echoed in the response
  std::string_view uid;
  std::string_view group, version, kind;  // request.kind
  std::string_view sub_resource;
  std::string_view operation;
  std::string_view namespace_name;
  std::string_view name;
  bool dry_run = false;
  const rapidjson::Value* object = nullptr;  // nullptr when absent or null
  ReviewStoragePtr storage;                  // the parsed body and its document
  const ReviewDocument* document = nullptr;  // in `storage`
};

// DecodedReview: either a request, or why the body is not an AdmissionReview (400), or a
// request with a readable uid whose other fields are broken (200 + `error` annotation),
// or a review whose decode the memory budget refused (503).
struct DecodedReview {
  enum class Status { kOk, kNotAReview, kUnreadableRequest, kOverBudget };
  Status status = Status::kNotAReview;
  std::string error;
  AdmissionRequest request;
};

// decode_review: checks the body is UTF-8 without NUL bytes, then reads it in one pass
// (scan_review, review_scan.h) that validates all of it and keeps only the members the
// envelope and the checks read; a syntax error is then described by RapidJSON's reader,
// as it always was. Then checks every kept member's type before reading it. `reserve` is
// asked as what is kept grows (the server's memory budget).
DecodedReview decode_review(std::string_view body, const ReserveKept& reserve = {});

// decode_review_dom: the same answer from RapidJSON's iterative reader and a DOM of all
// but request.oldObject, managedFields and last-applied-configuration: the reference the
// differential fuzzer (tests/fuzz/review_fuzz.cpp) holds decode_review to. It asks no
// budget (`reserve` is there for ReviewDecoder's shape).
DecodedReview decode_review_dom(std::string_view body, const ReserveKept& reserve = {});

// AdmissionResponse: what the webhook answers. Always allowed; never a patch.
struct AdmissionResponse {
  std::vector<std::string> warnings;
  // Keys are qualified-name name parts (the API server prefixes `<webhook-name>/`), each
  // once; encode_response writes them sorted. A key is a view: of a check id, "class" or
  // "error" (constants), or of a string that outlives the response.
  std::vector<std::pair<std::string_view, std::string>> audit_annotations;
};

std::string encode_response(std::string_view api_version, std::string_view uid, const AdmissionResponse& response);

// append_json_string: `text` as a JSON string, escaped byte for byte as RapidJSON's
// Writer escapes it (responses and JSON log lines are written with it).
void append_json_string(std::string& out, std::string_view text);

// encode_error: {"error": message} for 4xx answers.
std::string encode_error(std::string_view message);

}  // namespace kubegap
