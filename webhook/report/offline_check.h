#pragma once
// `kubegap-webhook check`: the webhook's findings for manifests on disk, before anything
// reaches a cluster. Same engine (evaluate_object), same policy, same case library.
//
//   CheckReport report = check_paths({"deploy/"}, policy);   // never throws on input
//   std::cout << render_text(report);
//   for (const auto& e : report.errors) std::cerr << e.text() << "\n";   // then exit 2

#include <functional>
#include <string>
#include <vector>

#include "policies/evaluate.h"
#include "policies/finding.h"
#include "policies/policy.h"
#include "webhook/core/errors.h"

namespace kubegap {

struct CheckedObject {
  std::string file;
  int line = 0;
  std::string api_version, kind, namespace_name, name;
  std::vector<Finding> findings;   // every outcome: findings, exempt, not evaluated
  std::vector<PartVerdict> parts;  // how each part was classified (--explain, json)
  std::string uid;                 // metadata.uid when known (`scan`; PolicyReport resources)
  // Where the judged templates came from (a TrainJob's runtime and overrides; --explain).
  std::vector<std::string> provenance = {};
};

struct SkippedObject {
  std::string file;
  int line = 0;
  std::string api_version, kind, name;
};

struct CheckReport {
  std::vector<CheckedObject> objects;  // every evaluated object, in input order
  std::vector<SkippedObject> skipped;  // kinds the webhook does not evaluate
  std::vector<std::string> notes;      // e.g. empty files, kustomize and Helm files
  // Every input that could not be read or evaluated, by file (in reading order) and line:
  // each costs only its own object or document, never the report.
  std::vector<InputProblem> errors;
  std::size_t budgets = 0, nodes = 0;  // the cluster view found in the input
  bool live_view = false;              // `scan`: the view was listed from the API server (empty or not)
  std::size_t finding_count() const;
};

// check_paths: reads files, directories (recursively *.yaml, *.yml, *.json) and "-"
// (stdin); multi-document YAML, JSON, `List` kinds and AdmissionReview files.
// PodDisruptionBudgets and Nodes in the input form the cluster view. Kustomize and Helm
// files (kustomization.yaml, Chart.yaml, values*.yaml, unrendered chart templates) are
// skipped with a note. What cannot be read lands in `errors`, and everything else is
// still checked.
CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy);

// CheckSource: how the MCP server reads: "-" is `stdin_text` (inline manifests), and a
// file is read only when `readable` says so (under the client's roots, symbolic links
// resolved); any other is an input error.
struct CheckSource {
  const std::string* stdin_text = nullptr;
  std::function<bool(const std::string& file)> readable;
};
CheckReport check_paths(const std::vector<std::string>& paths, const Policy& policy, const CheckSource& source);

// check_text: check_paths on one file's `text`, named `file` in the report (a Helm chart
// template is not recognised: that needs the file's directory).
CheckReport check_text(const std::string& text, const std::string& file, const Policy& policy);

}  // namespace kubegap
