#pragma once
// The CEL that `export vap` writes: the variables that find each check's gap in a pod
// template, in the API server's CEL environment, and the warning and audit annotation
// texts grouped as the webhook groups parts. vap_export.cpp assembles the policies
// from these; tests/e2e/test_vap.py runs them on a real kube-apiserver.
//
//   std::vector<Variable> v = part_variables(row);            // specs, metas, labels
//   for (auto& x : zone_variables()) v.push_back(std::move(x)); // zGap per part

#include <string>
#include <string_view>
#include <vector>

#include "policies/checks.h"
#include "policies/policy.h"

namespace kubegap::vap_cel {

// Variable: one entry of a policy's spec.variables.
struct Variable {
  std::string name, expression;
};

// kGroups: how many distinct messages of one check get a warning each (the webhook has
// no such cap; a workload with more kinds of the same gap shows the first three).
constexpr int kGroups = 3;

// CheckCel: a check and the variable holding its per-part gap.
struct CheckCel {
  std::string id, var;  // "zone-spread", "zGap"
};

// lower: ASCII lower case. quote: a CEL string literal. list_of: a CEL list of string
// literals. accelerator_match: CEL true when the resource name `r` matches a pattern.
std::string lower(std::string text);
std::string quote(std::string_view text);
std::string list_of(const std::vector<std::string>& items);
std::string accelerator_match(const std::vector<std::string>& patterns);

// has_chain: "has(a.b) && has(a.b.c)" for the fields after `base` ("true" for none);
// `end` gets the last one ("a.b.c").
std::string has_chain(const std::string& base, const std::vector<std::string_view>& fields, std::string* end);
// part_variables: the row's pod templates as aligned lists: specs, metas, labels, keys,
// and holders (the value holding each template) for a row whose parts have restart knobs.
std::vector<Variable> part_variables(const WorkloadKind& row);
// common_variables: what every check needs (accelerators, markers, exemptions).
std::vector<Variable> common_variables(const WorkloadKind& row, const Policy& policy);
// zone_variables, gpu_variables, checkpoint_variables: each check's gap per part, as
// [message, fix, annotation] ('' when none).
std::vector<Variable> zone_variables();
std::vector<Variable> gpu_variables(const Policy& policy);
std::vector<Variable> checkpoint_variables(const WorkloadKind& row, const Policy& policy);
// restart_variables: restart-on-failure's gap per part (the row has a restart model);
// needs checkpoint_variables' classes, and with `link` its gaps (the fix points at a
// checkpoint-volume finding, as the webhook's does).
std::vector<Variable> restart_variables(const WorkloadKind& row, const Policy& policy, bool link);
// group_variables: a check's parts grouped by (message, fix), and the warning texts.
std::vector<Variable> group_variables(const CheckCel& c, const CheckDefinition& check);
// annotation_expression: the audit annotation of a check (null when no part has a gap).
std::string annotation_expression(const CheckCel& c, const CheckDefinition& check);
// substitute_spec: an expression with each cel_s(i)(X) written out (CEL has no let here).
std::string substitute_spec(std::string expression);

}  // namespace kubegap::vap_cel
