#include "webhook/report/vap_export.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

#include "policies/checks.h"
#include "policies/evaluate.h"
#include "policies/text.h"
#include "webhook/core/yaml_json.h"
#include "webhook/report/vap_cel.h"

namespace kubegap {

namespace {

using namespace vap_cel;

// --- the documents ---------------------------------------------------------------------

using Doc = rapidjson::Document;
using Value = rapidjson::Value;

Value str(const std::string& text, Doc::AllocatorType& a) {
  return Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), a);
}

Value string_list(const std::vector<std::string>& items, Doc::AllocatorType& a) {
  Value out(rapidjson::kArrayType);
  for (const auto& item : items) out.PushBack(str(item, a), a);
  return out;
}

}  // namespace

namespace {

// require_exportable: ConfigError when a check of `checks` has no CEL form.
void require_exportable(const std::vector<std::string>& checks) {
  for (const auto& id : checks) {
    if (std::find(kVapChecks.begin(), kVapChecks.end(), id) == kVapChecks.end()) {
      std::string known;
      for (const auto& k : kVapChecks) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError("export vap: check \"" + id + "\" has no CEL form (exportable: " + known + ")");
    }
  }
}

// runs_on: whether this row's policy runs the check `id`. The classes whose parts this
// export evaluates are training and auto (serving only when labelled as training, which
// makes it training); restart-on-failure only on a kind with a restart budget to judge.
bool runs_on(const WorkloadKind& row, const Policy& policy, std::string_view id) {
  const bool skipped = std::find(row.skip_checks.begin(), row.skip_checks.end(), id) != row.skip_checks.end();
  const bool judged = id != kRestartOnFailure || !row.restart.model.empty();
  return !skipped && judged && policy.check_enabled(id) && policy.check_applies(id, WorkloadClass::kTraining);
}

// wanted_checks: the checks of `checks` that this row's policy runs.
std::vector<CheckCel> wanted_checks(const WorkloadKind& row, const Policy& policy,
                                    const std::vector<std::string>& checks) {
  std::vector<CheckCel> wanted;
  for (const auto& id : checks) {
    if (runs_on(row, policy, id)) {
      wanted.push_back({id, id == "zone-spread"              ? "zGap"
                            : id == "gpu-health-tolerations" ? "gGap"
                            : id == kRestartOnFailure        ? "rGap"
                                                             : "cGap"});
    }
  }
  return wanted;
}

// match_constraints: the row's kind and operations, outside the excluded namespaces.
Value match_constraints(const WorkloadKind& row, const Policy& policy, Doc::AllocatorType& a) {
  Value constraints(rapidjson::kObjectType);
  Value rules(rapidjson::kArrayType);
  Value rule(rapidjson::kObjectType);
  rule.AddMember("apiGroups", string_list({row.group}, a), a);
  rule.AddMember("apiVersions", string_list({"*"}, a), a);
  rule.AddMember("operations", string_list(row.operations, a), a);
  // The plural: the kind in lower case with an s, as every kind of the default table.
  rule.AddMember("resources", string_list({lower(row.kind) + "s"}, a), a);
  rules.PushBack(rule, a);
  constraints.AddMember("resourceRules", rules, a);
  if (!policy.excluded_namespaces.empty()) {
    Value selector(rapidjson::kObjectType), expressions(rapidjson::kArrayType), requirement(rapidjson::kObjectType);
    requirement.AddMember("key", "kubernetes.io/metadata.name", a);
    requirement.AddMember("operator", "NotIn", a);
    requirement.AddMember("values", string_list(policy.excluded_namespaces, a), a);
    expressions.PushBack(requirement, a);
    selector.AddMember("matchExpressions", expressions, a);
    constraints.AddMember("namespaceSelector", selector, a);
  }
  return constraints;
}

// variables_of: spec.variables: the parts, what every check needs, then each check's own.
Value variables_of(const WorkloadKind& row, const Policy& policy, const std::vector<CheckCel>& wanted,
                   Doc::AllocatorType& a) {
  std::vector<Variable> variables = part_variables(row);
  for (auto& v : common_variables(row, policy)) variables.push_back(std::move(v));
  const auto wants = [&](std::string_view id) {
    return std::any_of(wanted.begin(), wanted.end(), [&](const CheckCel& c) { return c.id == id; });
  };
  // restart-on-failure needs checkpoint-volume's classes, and links to its finding when
  // the policy runs it here (whether or not it is exported).
  const bool checkpoint_runs = runs_on(row, policy, kCheckpointVolume);
  if (wants(kCheckpointVolume) || wants(kRestartOnFailure)) {
    for (auto& v : checkpoint_variables(row, policy)) variables.push_back(std::move(v));
  }
  for (const auto& c : wanted) {
    auto own = c.id == "zone-spread"              ? zone_variables()
               : c.id == "gpu-health-tolerations" ? gpu_variables(policy)
               : c.id == kRestartOnFailure        ? restart_variables(row, policy, checkpoint_runs)
                                                  : std::vector<Variable>{};
    for (auto& v : own) variables.push_back(std::move(v));
    for (auto& v : group_variables(c, *find_check(c.id))) variables.push_back(std::move(v));
  }
  Value vars(rapidjson::kArrayType);
  for (const auto& v : variables) {
    Value item(rapidjson::kObjectType);
    item.AddMember("name", str(v.name, a), a);
    item.AddMember("expression", str(substitute_spec(v.expression), a), a);
    vars.PushBack(item, a);
  }
  return vars;
}

// add_validations: per check, kGroups validations (one warning each), each with one for
// its fix when the fix did not fit in the warning, and its annotation.
void add_validations(const std::vector<CheckCel>& wanted, Value& spec, Doc::AllocatorType& a) {
  Value validations(rapidjson::kArrayType), annotations(rapidjson::kArrayType);
  for (const auto& c : wanted) {
    const CheckDefinition* check = find_check(c.id);
    for (int k = 0; k < kGroups; ++k) {
      Value validation(rapidjson::kObjectType);
      validation.AddMember(
          "expression",
          str(quote(c.id) + " in variables.exempt || size(variables." + c.var + "Heads) <= " + std::to_string(k), a),
          a);
      validation.AddMember("messageExpression", str("variables." + c.var + "Text[" + std::to_string(k) + "]", a), a);
      validation.AddMember("reason", "Invalid", a);
      validations.PushBack(validation, a);
      // Its fix, when it did not fit in the warning (as the webhook's second warning).
      Value fix(rapidjson::kObjectType);
      fix.AddMember("expression",
                    str(quote(c.id) + " in variables.exempt || size(variables." + c.var + "Heads) <= " +
                            std::to_string(k) + " || variables." + c.var + "Fits[" + std::to_string(k) + "]",
                        a),
                    a);
      fix.AddMember("messageExpression", str("variables." + c.var + "FixText[" + std::to_string(k) + "]", a), a);
      fix.AddMember("reason", "Invalid", a);
      validations.PushBack(fix, a);
    }
    Value annotation(rapidjson::kObjectType);
    annotation.AddMember("key", str(c.id, a), a);
    annotation.AddMember("valueExpression", str(annotation_expression(c, *check), a), a);
    annotations.PushBack(annotation, a);
  }
  spec.AddMember("validations", validations, a);
  spec.AddMember("auditAnnotations", annotations, a);
}

// policy_document: the ValidatingAdmissionPolicy of one row, as YAML.
std::string policy_document(const std::string& name, const WorkloadKind& row, const Policy& policy,
                            const std::vector<CheckCel>& wanted) {
  Doc doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
  doc.AddMember("kind", "ValidatingAdmissionPolicy", a);
  Value meta(rapidjson::kObjectType);
  meta.AddMember("name", str(name, a), a);
  Value labels(rapidjson::kObjectType);
  labels.AddMember("app.kubernetes.io/managed-by", "kubegap-webhook", a);
  meta.AddMember("labels", labels, a);
  doc.AddMember("metadata", meta, a);
  Value spec(rapidjson::kObjectType);
  spec.AddMember("failurePolicy", "Ignore", a);
  spec.AddMember("matchConstraints", match_constraints(row, policy, a), a);
  spec.AddMember("variables", variables_of(row, policy, wanted, a), a);
  add_validations(wanted, spec, a);
  doc.AddMember("spec", spec, a);
  return "---\n" + json_to_yaml(doc);
}

// binding_document: the binding of the policy `name`: warn and audit, never deny.
std::string binding_document(const std::string& name) {
  Doc doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
  doc.AddMember("kind", "ValidatingAdmissionPolicyBinding", a);
  Value meta(rapidjson::kObjectType);
  meta.AddMember("name", str(name, a), a);
  doc.AddMember("metadata", meta, a);
  Value spec(rapidjson::kObjectType);
  spec.AddMember("policyName", str(name, a), a);
  spec.AddMember("validationActions", string_list({"Warn", "Audit"}, a), a);
  doc.AddMember("spec", spec, a);
  return "---\n" + json_to_yaml(doc);
}

}  // namespace

std::string vap_policy_name(const WorkloadKind& row) {
  // Appended step by step: `"literal" + lower(...)` (operator+ on a temporary) trips
  // GCC 12's -Wrestrict false positive (GCC bug 105329) once FORTIFY_SOURCE inlines it.
  std::string name = "kubegap-";
  name += lower(row.kind);
  if (!row.group.empty()) {
    name += '.';
    name += lower(row.group);
  }
  return name;
}

std::string export_vap(const Policy& policy, const std::vector<std::string>& checks) {
  require_exportable(checks);
  std::vector<std::string> names;
  std::string out;
  for (const auto& row : policy.workload_kinds) {
    // Not expressible in CEL: a wrapper's objects are judged by other rows, and a TrainJob
    // through its runtime, another object (docs/vap.md).
    if (!row.wraps.empty() || !row.resolve.empty()) continue;
    const std::vector<CheckCel> wanted = wanted_checks(row, policy, checks);
    if (wanted.empty()) continue;
    names.push_back(vap_policy_name(row));
    out += policy_document(names.back(), row, policy, wanted);
  }
  for (const auto& name : names) out += binding_document(name);
  return out;
}

}  // namespace kubegap
