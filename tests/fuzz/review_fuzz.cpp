// Fuzz target: an AdmissionReview body through ReviewHandler::handle (decode → classify →
// evaluate → encode), the path every request of the API server takes. The body is
// untrusted, so whatever it holds the handler must answer without crashing, and what it
// answers must be JSON; a review it accepts gets allowed: true and warnings the API server
// keeps (DESIGN.md, "The wire contract": no control characters).
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "tests/fuzz/fuzz_oracle.h"
#include "webhook/core/cluster_state_file.h"
#include "webhook/core/review_handler.h"

namespace {

// A small cluster view, so that disruption-budget and zone-spread see PDBs and Nodes.
constexpr std::string_view kClusterState = R"(apiVersion: v1
kind: List
items:
- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata: {name: trainer, namespace: ml-research}
  spec:
    minAvailable: 1
    selector: {matchLabels: {app: llm-pretrain}}
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-0
    labels: {topology.kubernetes.io/zone: europe-west4-a, nvidia.com/gpu.product: A100}
  spec:
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
)";

void check_answer(const kubegap::ReviewResult& result) {
  rapidjson::Document doc;
  doc.Parse(result.body.data(), result.body.size());
  kgfuzz::require(!doc.HasParseError() && doc.IsObject(), "the answer is a JSON object");
  if (result.status != 200) return;
  const auto response = doc.FindMember("response");
  kgfuzz::require(response != doc.MemberEnd() && response->value.IsObject(), "a 200 answer has a response");
  const auto allowed = response->value.FindMember("allowed");
  kgfuzz::require(allowed != response->value.MemberEnd() && allowed->value.IsTrue(), "audit mode always allows");
  const auto warnings = response->value.FindMember("warnings");
  if (warnings == response->value.MemberEnd()) return;
  kgfuzz::require(warnings->value.IsArray(), "warnings is an array");
  for (const auto& warning : warnings->value.GetArray()) {
    kgfuzz::require(warning.IsString(), "a warning is a string");
    for (const char c : std::string_view(warning.GetString(), warning.GetStringLength())) {
      kgfuzz::require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "no control characters in a warning");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const kubegap::PolicyStore policies{kubegap::default_policy()};
  static const kubegap::NoClusterView no_cluster;
  static const kubegap::StaticClusterView cluster{kubegap::parse_cluster_state(kClusterState, "fuzz-cluster.yaml")};
  static const kubegap::ReviewHandler without_view{policies, no_cluster};
  static const kubegap::ReviewHandler with_view{policies, cluster};

  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check_answer(without_view.handle(body));
  check_answer(with_view.handle(body));
  return 0;
}
