#pragma once
// ReviewHandler: one AdmissionReview body in, one HTTP answer out. No sockets, no clock,
// no logging: the server measures, logs and counts around it.
//
//   ReviewHandler handler(policy_store, cluster_view);
//   ReviewResult result = handler.handle(body);   // result.status, result.body

#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "webhook/core/admission_codec.h"
#include "webhook/core/policy_store.h"

namespace kubegap {

// ReviewResult: the HTTP answer plus what the server logs and counts.
struct ReviewResult {
  int status = 200;
  std::string body;
  std::string uid;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string operation;
  bool evaluated = false;               // a pod spec was evaluated
  std::vector<std::string_view> found;  // check ids with a warning (the registry's: they live on)
  std::string error;                    // why the request was not an AdmissionReview / not evaluable
};

// ReviewDecoder: decode_review; the differential fuzzer gives the DOM decoder instead.
using ReviewDecoder = DecodedReview (*)(std::string_view body, const ReserveKept& reserve);

// ReviewHandler::handle: decodes the review, evaluates the object under the current
// policy and cluster view, and encodes the AdmissionReview answer; never throws on the body.
// `reserve` is asked as the decode keeps more (status 503 when it refuses).
class ReviewHandler {
 public:
  ReviewHandler(const PolicyStore& policies, const ClusterView& cluster, ReviewDecoder decoder = decode_review)
      : policies_(policies), cluster_(cluster), decoder_(decoder) {}

  ReviewResult handle(std::string_view body, const ReserveKept& reserve = {}) const;

 private:
  const PolicyStore& policies_;
  const ClusterView& cluster_;
  ReviewDecoder decoder_;
};

}  // namespace kubegap
