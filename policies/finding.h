#pragma once
// Finding: what one check concluded about the object under review.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

enum class Outcome {
  kFinding,       // a gap: a warning and an audit annotation
  kExempt,        // a gap the object exempted: an audit annotation "exempt: <reason>"
  kNotEvaluated,  // the check lacked what it needs: annotation "not evaluated: <why>"
  kNote,          // passed, with something the audit trail should keep: "note: <what>"
};

// check and cases are views: they name a check of the registry (check_registry(), or a
// note's constant id) and its case list, which live as long as the program, so a review
// copies neither.
struct Finding {
  std::string_view check;  // check id, e.g. "checkpoint-volume"
  Outcome outcome = Outcome::kFinding;
  std::string message;                 // what is wrong, where, and what it costs (the warning's body)
  std::string reason;                  // short reason for the audit annotation
  std::span<const std::string> cases;  // case ids that show why it matters
  std::vector<std::string> parts;      // workload parts affected (empty for a Pod)
  // The policy's action for the check is `audit`: an audit annotation, no warning.
  bool audit_only = false;
  // One line saying what to add or change in the manifest to close the gap (findings
  // only; empty otherwise).
  std::string remedy;
};

// warns: a finding that becomes a warning (a gap, reported with the `warn` action).
inline bool warns(const Finding& finding) { return finding.outcome == Outcome::kFinding && !finding.audit_only; }

}  // namespace kubegap
