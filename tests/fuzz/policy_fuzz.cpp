// Fuzz target: a policy file through parse_policy, then the policy it yields through one
// review. A bad policy file must be a ConfigError naming the line (never another
// exception, never a crash), and a policy the loader accepts must be one the checks can
// evaluate with.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policies/cluster_view.h"
#include "tests/fuzz/fuzz_oracle.h"
#include "webhook/core/policy_loader.h"
#include "webhook/core/review_handler.h"

namespace {

// A GPU training pod with every gap: each check has something to read.
constexpr std::string_view kReview = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
"request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"name":"trainer-0","namespace":"ml",
"operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod",
"metadata":{"name":"trainer-0","namespace":"ml","labels":{"app":"train"}},
"spec":{"containers":[{"name":"trainer","image":"pytorch","command":["torchrun","train.py","--save-dir=/ckpt"],
"resources":{"limits":{"nvidia.com/gpu":"8"}},"volumeMounts":[{"name":"ckpt","mountPath":"/ckpt"}]}],
"volumes":[{"name":"ckpt","emptyDir":{}}],
"nodeSelector":{"topology.kubernetes.io/zone":"us-east1-b"},
"tolerations":[{"operator":"Exists"}]}}}})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const kubegap::NoClusterView no_cluster;
  kubegap::Policy policy;
  try {
    policy = kubegap::parse_policy(std::string_view(reinterpret_cast<const char*>(data), size), "policy.yaml");
  } catch (const kubegap::ConfigError&) {
    return 0;  // the documented failure; anything else escapes and is reported
  }
  const kubegap::PolicyStore store{std::move(policy)};
  const kubegap::ReviewResult result = kubegap::ReviewHandler{store, no_cluster}.handle(kReview);
  kgfuzz::require(result.status == 200, "the fixed review is answered under any accepted policy");
  kgfuzz::require_json(result.body, "the answer is JSON");
  return 0;
}
