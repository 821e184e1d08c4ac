// Fuzz target: an AdmissionReview body through ReviewHandler::handle (decode → classify →
// evaluate → encode), the path every request of the API server takes. The body is
// untrusted, so whatever it holds the handler must answer without crashing, and what it
// answers must be JSON; a review it accepts gets allowed: true and warnings the API server
// keeps (DESIGN.md, "The wire contract": no control characters).
//
// It is also the differential oracle of the one-pass decoder (decode_review, review_scan.h)
// against the DOM decoder it replaced (decode_review_dom): both take and refuse the same
// bodies with the same messages, keep the same values, and the handler answers the same.
#include <rapidjson/document.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "policies/text.h"
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

// written: an object as compact JSON without its status (only the DOM decoder keeps it),
// every one of them (JSON allows a member twice), each erased in place: RemoveMember
// moves the last member into the hole, and the order of the others is part of what the
// decoders must agree on (the fuzzer found a status followed by other members).
std::string written(const rapidjson::Value& value) {
  rapidjson::Document copy;
  copy.CopyFrom(value, copy.GetAllocator());
  for (auto status = copy.FindMember("status"); status != copy.MemberEnd(); status = copy.FindMember("status")) {
    copy.EraseMember(status);
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  copy.Accept(writer);
  return buffer.GetString();
}

void check_decoders_agree(std::string_view body) {
  const kubegap::DecodedReview fast = kubegap::decode_review(body);
  const kubegap::DecodedReview dom = kubegap::decode_review_dom(body);
  kgfuzz::require(fast.status == dom.status, "both decoders give the same status");
  kgfuzz::require(fast.error == dom.error, "both decoders give the same error");
  const auto& a = fast.request;
  const auto& b = dom.request;
  kgfuzz::require(a.api_version == b.api_version && a.uid == b.uid && a.group == b.group && a.version == b.version &&
                      a.kind == b.kind && a.sub_resource == b.sub_resource && a.operation == b.operation &&
                      a.namespace_name == b.namespace_name && a.name == b.name && a.dry_run == b.dry_run,
                  "both decoders read the same envelope");
  kgfuzz::require((a.object == nullptr) == (b.object == nullptr), "both decoders see an object or none");
  if (a.object != nullptr) {
    kgfuzz::require(a.object->IsObject() == b.object->IsObject(), "both decoders see an object's type alike");
    if (a.object->IsObject()) kgfuzz::require(written(*a.object) == written(*b.object), "both keep the same object");
  }
  // The scan alone against RapidJSON's reader: decode_review would hide a scan that
  // refused a valid body (it asks the DOM decoder then), so the verdicts are compared here.
  {
    std::vector<char> text(body.begin(), body.end());
    text.resize(body.size() + kubegap::kTextPadding, '\0');
    kubegap::ReviewDocument document;
    const bool clean_text =
        body.find('\0') == std::string_view::npos && kubegap::invalid_utf8_at(body) == std::string_view::npos;
    const bool scanned = kubegap::scan_review(text.data(), body.size(), document, {}) == kubegap::ReviewScan::kAccepted;
    std::string copy(body);
    rapidjson::StringStream stream(copy.c_str());
    rapidjson::BaseReaderHandler<> nothing;
    rapidjson::Reader reader;
    const bool parsed = clean_text && !reader.Parse<rapidjson::kParseIterativeFlag>(stream, nothing).IsError();
    kgfuzz::require(scanned == parsed, "the scan takes exactly what RapidJSON's reader takes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const kubegap::PolicyStore policies{kubegap::default_policy()};
  static const kubegap::NoClusterView no_cluster;
  static const kubegap::StaticClusterView cluster{kubegap::parse_cluster_state(kClusterState, "fuzz-cluster.yaml")};
  static const kubegap::ReviewHandler without_view{policies, no_cluster};
  static const kubegap::ReviewHandler with_view{policies, cluster};
  static const kubegap::ReviewHandler with_view_dom{policies, cluster, kubegap::decode_review_dom};

  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check_answer(without_view.handle(body));
  const kubegap::ReviewResult result = with_view.handle(body);
  check_answer(result);
  check_decoders_agree(body);
  const kubegap::ReviewResult reference = with_view_dom.handle(body);
  kgfuzz::require(result.status == reference.status && result.body == reference.body,
                  "the handler answers the same with either decoder");
  return 0;
}
