#pragma once
// ReviewHandler: one AdmissionReview body in, one HTTP answer out. No sockets, no clock,
// no logging: the server measures, logs and counts around it.
//
//   ReviewHandler handler(policy_store, cluster_view);
//   ReviewResult result = handler.handle(body);   // result.status, result.body

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "policies/evaluate.h"
#include "policies/finding.h"
#include "policies/policy.h"

namespace kubegap {

// PolicyStore: the current policy, swapped atomically when a new one is loaded.
class PolicyStore {
 public:
  explicit PolicyStore(Policy policy) : current_(std::make_shared<const Policy>(std::move(policy))) {}
  std::shared_ptr<const Policy> get() const { return current_.load(); }
  void set(Policy policy) { current_.store(std::make_shared<const Policy>(std::move(policy))); }

 private:
  std::atomic<std::shared_ptr<const Policy>> current_;
};

// ReviewResult: the HTTP answer plus what the server logs and counts.
struct ReviewResult {
  int status = 200;
  std::string body;
  std::string uid;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string operation;
  bool evaluated = false;            // a pod spec was evaluated
  std::vector<std::string> found;    // check ids with a warning
  std::string error;                 // why the request was not an AdmissionReview / not evaluable
};

// ObjectEvaluation: one object (a Pod or a workload) through the engine: its view, the
// findings, or why it could not be read. Shared by the webhook and `check`.
struct ObjectEvaluation {
  WorkloadView object;
  std::vector<Finding> findings;
  std::vector<PartVerdict> parts;  // how each pod spec was classified
  std::string error;  // a type error, with its JSON path; findings are empty then
};

// evaluate_object: decodes `json` (an object of kind `row`) and evaluates its pod specs.
ObjectEvaluation evaluate_object(const rapidjson::Value& json, std::string_view json_path, const WorkloadKind& row,
                                 const std::string& default_namespace, const ClusterSnapshot* cluster,
                                 const Policy& policy, std::string_view cluster_unavailable,
                                 const ClusterSnapshot* claims = nullptr);

class ReviewHandler {
 public:
  ReviewHandler(const PolicyStore& policies, const ClusterView& cluster)
      : policies_(policies), cluster_(cluster) {}

  ReviewResult handle(std::string_view body) const;

 private:
  const PolicyStore& policies_;
  const ClusterView& cluster_;
};

}  // namespace kubegap
