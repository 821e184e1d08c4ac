#pragma once
// `kubegap-webhook export vap`: the spec-only checks as ValidatingAdmissionPolicies (CEL,
// admissionregistration.k8s.io/v1), for clusters that run no webhook on the API server's
// path. Generated from the policy in force: one policy per row of the workload table
// (its pod-template paths become CEL variables), the accelerator resources, framework
// labels, GPU-fault taint keys, the toleration bound, excluded namespaces and exemption
// annotations. Each policy has a binding with validationActions [Warn, Audit].
//
//   std::string yaml = export_vap(policy, kVapChecks);
//   // kubectl apply -f - takes it as is
//
// Which checks can be exported, and where the CEL differs from the webhook, is in the
// docs/vap.md; tests/e2e/test_vap.py compares both
// on a real kube-apiserver.

#include <string>
#include <vector>

#include "policies/policy.h"

namespace kubegap {

// kVapChecks: the checks that have a CEL form (disruption-budget needs the PDBs).
inline const std::vector<std::string> kVapChecks = {"checkpoint-volume", "zone-spread", "gpu-health-tolerations",
                                                    "restart-on-failure"};

// export_vap: YAML documents (policies, then bindings) for the `checks` (a subset of
// kVapChecks that the policy enables). Throws ConfigError for a check without a CEL form
// or a workload row whose template paths CEL cannot walk (more than one iterating
// segment).
std::string export_vap(const Policy& policy, const std::vector<std::string>& checks);

// vap_policy_name: "kubegap-pytorchjob.kubeflow.org", "kubegap-pod".
std::string vap_policy_name(const WorkloadKind& row);

}  // namespace kubegap
