#pragma once
// `kubegap-webhook check`: the webhook's findings for manifests on disk, before anything
// reaches a cluster. Same engine (evaluate_object), same policy, same case library.
//
//   CheckReport report = check_paths({"deploy/"}, policy);   // throws InputError
//   std::cout << render_text(report);

#include <stdexcept>
#include <string>
#include <vector>

#include "policies/finding.h"
#include "policies/policy.h"

namespace kubegap {

// InputError: an input that cannot be read (exit 2); the message names file and line.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckedObject {
  std::string file;
  int line = 0;
  std::string api_version, kind, namespace_name, name;
  std::vector<Finding> findings;  // every outcome: findings, exempt, not evaluated
};

struct SkippedObject {
  std::string file;
  int line = 0;
  std::string api_version, kind, name;
};

struct CheckReport {
  std::vector<CheckedObject> objects;  // every evaluated object, in input order
  std::vector<SkippedObject> skipped;  // kinds the webhook does not evaluate
  std::vector<std::string> notes;      // e.g. empty files
  std::size_t budgets = 0, nodes = 0;  // the cluster view found in the input
  std::size_t finding_count() const;
};

// check_paths: reads files, directories (recursively *.yaml, *.yml, *.json) and "-"
// (stdin); multi-document YAML, JSON, `List` kinds and AdmissionReview files.
// PodDisruptionBudgets and Nodes in the input form the cluster view.
CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy);

std::string render_text(const CheckReport& report);
std::string render_json(const CheckReport& report);
// render_sarif: SARIF 2.1.0, one result per finding with its file and line.
std::string render_sarif(const CheckReport& report);

}  // namespace kubegap
