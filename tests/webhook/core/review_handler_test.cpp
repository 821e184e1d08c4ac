// ReviewHandler: AdmissionReview body in, HTTP status and body out. Golden files pin the
// whole response for real-shaped reviews; the rule tests below state each behaviour of
// DESIGN.md ("wire contract", "behaviour on bad input") on its own.
//
// Regenerate the goldens with KUBEGAP_UPDATE_GOLDEN=1 ./webhook_test, then read every
// changed file before keeping it.
#include "webhook/core/review_handler.h"

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "policies/text.h"
#include "tests/webhook/test_util.h"
#include "webhook/core/cluster_state_file.h"

namespace kgtest {
namespace {

using kubegap::ClusterSnapshot;
using kubegap::default_policy;
using kubegap::DisruptionBudget;
using kubegap::LabelSelector;
using kubegap::NoClusterView;
using kubegap::Policy;
using kubegap::PolicyStore;
using kubegap::ReviewHandler;
using kubegap::ReviewResult;
using kubegap::StaticClusterView;

std::string review_fixture(const std::string& name) {
  const auto text = read_text(fixture_path("reviews/" + name + ".json"));
  EXPECT_TRUE(text.has_value()) << "missing fixture reviews/" << name << ".json";
  return text.value_or("");
}

// Harness: the default policy and no cluster view, as `serve` runs without --cluster-state.
struct Harness {
  PolicyStore policies{default_policy()};
  NoClusterView no_cluster;
  ReviewHandler handler{policies, no_cluster};

  ReviewResult handle(std::string_view body) const { return handler.handle(body); }
};

std::vector<std::string> warnings_of(const rapidjson::Value& doc) {
  std::vector<std::string> out;
  const auto* response = member(doc, "response");
  const auto* warnings = response ? member(*response, "warnings") : nullptr;
  if (warnings == nullptr) return out;
  EXPECT_TRUE(warnings->IsArray());
  if (!warnings->IsArray()) return out;
  for (const auto& w : warnings->GetArray()) out.push_back(str(w));
  return out;
}

std::map<std::string, std::string> annotations_of(const rapidjson::Value& doc) {
  std::map<std::string, std::string> out;
  const auto* response = member(doc, "response");
  const auto* annotations = response ? member(*response, "auditAnnotations") : nullptr;
  if (annotations == nullptr) return out;
  EXPECT_TRUE(annotations->IsObject());
  if (!annotations->IsObject()) return out;
  for (const auto& m : annotations->GetObject()) {
    out.emplace(std::string(m.name.GetString(), m.name.GetStringLength()), str(m.value));
  }
  return out;
}

// finding_annotations: the annotations of the checks, without `class` (how the pod was
// judged, asserted on its own).
std::map<std::string, std::string> finding_annotations(const rapidjson::Value& doc) {
  auto out = annotations_of(doc);
  out.erase("class");
  return out;
}

// The API server drops an audit annotation whose key is not a qualified-name name part.
bool valid_annotation_key(const std::string& key) {
  static const std::regex kName("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
  return key.size() <= 63 && std::regex_match(key, kName);
}

// expect_valid_answer: what every 200 answer must satisfy whatever the review held.
void expect_valid_answer(std::string_view request_body, const ReviewResult& result) {
  ASSERT_EQ(result.status, 200) << result.body;
  rapidjson::Document request;
  ASSERT_FALSE(try_parse_json(request_body, request).has_value());
  const auto response_doc = parse_json(result.body);
  ASSERT_TRUE(response_doc.IsObject());
  EXPECT_EQ(str(response_doc["apiVersion"]), str(request["apiVersion"]));
  EXPECT_EQ(str(response_doc["kind"]), "AdmissionReview");
  const auto* response = member(response_doc, "response");
  ASSERT_NE(response, nullptr);
  EXPECT_EQ(str((*response)["uid"]), str(request["request"]["uid"]));
  EXPECT_EQ(result.uid, str(request["request"]["uid"]));
  ASSERT_TRUE((*response)["allowed"].IsBool());
  EXPECT_TRUE((*response)["allowed"].GetBool());
  EXPECT_EQ(member(*response, "patch"), nullptr);
  EXPECT_EQ(member(*response, "patchType"), nullptr);
  std::size_t total_runes = 0;
  for (const auto& warning : warnings_of(response_doc)) {
    const Utf8Scan scan = scan_utf8(warning);
    EXPECT_TRUE(scan.valid) << warning;
    EXPECT_FALSE(scan.has_control) << warning;
    EXPECT_LE(scan.runes, 256u) << warning;
    EXPECT_EQ(warning.rfind("kubegap/", 0), 0u) << warning;
    EXPECT_EQ(warning.rfind("Warning:", 0), std::string::npos) << warning;
    total_runes += scan.runes;
  }
  EXPECT_LE(total_runes, 4096u);
  for (const auto& [key, value] : annotations_of(response_doc)) {
    EXPECT_TRUE(valid_annotation_key(key)) << key;
    const Utf8Scan scan = scan_utf8(value);
    EXPECT_TRUE(scan.valid) << value;
    EXPECT_FALSE(scan.has_control) << value;
  }
}

// ---------------------------------------------------------------------------------------
// Golden files: every fixture in tests/fixtures/reviews has one.

// golden_fixtures: every review in tests/fixtures/reviews, sorted; adding a fixture adds
// a golden test (which fails until its golden file exists).
std::vector<std::string> golden_fixtures() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("reviews"))) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class GoldenResponse : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenResponse, MatchesTheGoldenFileAndTheWireContract) {
  Harness harness;
  const std::string body = review_fixture(GetParam());
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  const auto doc = parse_json(result.body);
  expect_matches_golden(doc, "golden/" + GetParam() + ".response.json");
}

INSTANTIATE_TEST_SUITE_P(Reviews, GoldenResponse, ::testing::ValuesIn(golden_fixtures()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

TEST(GoldenFiles, TheRequiredFixturesExist) {
  const auto names = golden_fixtures();
  for (const char* required :
       {"gpu-pod-gaps", "gpu-pod-well-configured", "pod-null-object", "gpu-pod-v1beta1", "gpu-pod-generate-name",
        "pod-containers-is-object", "pod-label-value-is-number", "pod-toleration-seconds-is-string", "pod-delete",
        "configmap-create", "pod-status-subresource", "nginx-pod", "kube-system-gpu-pod"}) {
    EXPECT_TRUE(std::find(names.begin(), names.end(), required) != names.end()) << required;
  }
}

TEST(GoldenFiles, EveryGoldenFileHasAFixture) {
  const auto names = golden_fixtures();
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("golden"))) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".response.json";
    ASSERT_TRUE(file.ends_with(suffix)) << file;
    const std::string name = file.substr(0, file.size() - suffix.size());
    EXPECT_TRUE(std::find(names.begin(), names.end(), name) != names.end())
        << "stale golden " << file << ": no reviews/" << name << ".json";
  }
}

// ---------------------------------------------------------------------------------------
// The rules, one at a time.

TEST(ReviewHandler, GappyGpuPodGetsOneCitedWarningPerGapAndBudgetIsNotEvaluated) {
  Harness harness;
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-gaps"));
  ASSERT_EQ(result.status, 200);
  EXPECT_TRUE(result.evaluated);
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.found,
            (std::vector<std::string_view>{"checkpoint-volume", "zone-spread", "gpu-health-tolerations"}));
  const auto doc = parse_json(result.body);
  const auto warnings = warnings_of(doc);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_EQ(warnings[0].rfind("kubegap/checkpoint-volume: ", 0), 0u) << warnings[0];
  EXPECT_NE(warnings[0].find("/checkpoints"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("emptyDir"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[1].rfind("kubegap/zone-spread: ", 0), 0u) << warnings[1];
  EXPECT_NE(warnings[1].find("us-east-1a"), std::string::npos) << warnings[1];
  EXPECT_EQ(warnings[2].rfind("kubegap/gpu-health-tolerations: ", 0), 0u) << warnings[2];
  for (const auto& w : warnings) {
    EXPECT_TRUE(std::regex_search(w, std::regex(R"( \(case [a-z0-9-]+\)$)"))) << w;
  }
  const auto annotations = finding_annotations(doc);
  EXPECT_EQ(annotations.size(), 4u);
  EXPECT_EQ(annotations_of(doc).at("class"), "training (launcher torchrun)");
  EXPECT_EQ(annotations.at("disruption-budget"), "not evaluated: no cluster view");
  EXPECT_FALSE(annotations.contains("error"));
}

TEST(ReviewHandler, WellConfiguredGpuPodGetsNoWarningAndOnlyTheBudgetNotEvaluatedAnnotation) {
  Harness harness;
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-well-configured"));
  ASSERT_EQ(result.status, 200);
  EXPECT_TRUE(result.evaluated);
  EXPECT_TRUE(result.found.empty());
  const auto doc = parse_json(result.body);
  EXPECT_TRUE(warnings_of(doc).empty());
  EXPECT_EQ(member(doc["response"], "warnings"), nullptr);
  auto annotations = annotations_of(doc);
  // The class annotation says why the pod was judged (a bare GPU pod: training evidence).
  ASSERT_TRUE(annotations.contains("class"));
  EXPECT_EQ(annotations.at("class").rfind("training (", 0), 0u) << annotations.at("class");
  annotations.erase("class");
  ASSERT_EQ(annotations.size(), 1u);
  EXPECT_EQ(annotations.begin()->first, "disruption-budget");
  EXPECT_EQ(annotations.begin()->second.rfind("not evaluated", 0), 0u);
}

TEST(ReviewHandler, NullObjectOnPodCreateIsAllowedWithAnErrorAnnotation) {
  Harness harness;
  const std::string body = review_fixture("pod-null-object");
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  EXPECT_FALSE(result.evaluated);
  EXPECT_NE(result.error, "");
  const auto doc = parse_json(result.body);
  EXPECT_TRUE(warnings_of(doc).empty());
  const auto annotations = annotations_of(doc);
  ASSERT_EQ(annotations.size(), 1u);
  EXPECT_EQ(annotations.at("error"), "not evaluated: request.object is missing or not an object");
}

TEST(ReviewHandler, ObjectThatIsNotAnObjectIsAllowedWithAnErrorAnnotation) {
  Harness harness;
  for (const char* object : {"[]", "\"pod\"", "42", "true"}) {
    const std::string body =
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
        R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"ml","object":)" +
        std::string(object) + "}}";
    const ReviewResult result = harness.handle(body);
    expect_valid_answer(body, result);
    EXPECT_EQ(
        annotations_of(parse_json(result.body)),
        (std::map<std::string, std::string>{{"error", "not evaluated: request.object is missing or not an object"}}))
        << object;
  }
}

TEST(ReviewHandler, V1beta1ReviewIsAnsweredInV1beta1WithTheSameFindings) {
  Harness harness;
  const auto v1 = parse_json(harness.handle(review_fixture("gpu-pod-gaps")).body);
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-v1beta1"));
  ASSERT_EQ(result.status, 200);
  const auto beta = parse_json(result.body);
  EXPECT_EQ(str(beta["apiVersion"]), "admission.k8s.io/v1beta1");
  EXPECT_EQ(str(beta["kind"]), "AdmissionReview");
  EXPECT_EQ(warnings_of(beta), warnings_of(v1));
  EXPECT_EQ(annotations_of(beta), annotations_of(v1));
}

TEST(ReviewHandler, GenerateNamePodIsEvaluatedAndNamedByItsPrefix) {
  Harness harness;
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-generate-name"));
  ASSERT_EQ(result.status, 200);
  EXPECT_TRUE(result.evaluated);
  EXPECT_EQ(result.name, "llm-pretrain-*");
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(warnings_of(parse_json(result.body)).size(), 3u);
}

TEST(ReviewHandler, DryRunGetsTheSameWarningsAsARealCreate) {
  Harness harness;
  const auto real = parse_json(harness.handle(review_fixture("gpu-pod-gaps")).body);
  const auto dry = parse_json(harness.handle(review_fixture("gpu-pod-dry-run")).body);
  EXPECT_FALSE(warnings_of(dry).empty());
  EXPECT_EQ(warnings_of(dry), warnings_of(real));
  EXPECT_EQ(annotations_of(dry), annotations_of(real));
}

TEST(ReviewHandler, ExemptedCheckGivesNoWarningButAnExemptAnnotationWithTheReason) {
  Harness harness;
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-exempt-checkpoint"));
  ASSERT_EQ(result.status, 200);
  EXPECT_EQ(result.found, (std::vector<std::string_view>{"zone-spread", "gpu-health-tolerations"}));
  const auto doc = parse_json(result.body);
  for (const auto& w : warnings_of(doc)) EXPECT_EQ(w.find("checkpoint-volume"), std::string::npos) << w;
  EXPECT_EQ(annotations_of(doc).at("checkpoint-volume"), "exempt: checkpoints go to s3://ml-ckpt via the SDK");
}

// A member of the wrong type makes the object unevaluable: 200, an `error` annotation
// naming the JSON path, and no findings at all.
struct WrongTypeCase {
  const char* fixture;
  const char* annotation;
};

class WrongMemberType : public ::testing::TestWithParam<WrongTypeCase> {};

TEST_P(WrongMemberType, IsAllowedWithAnErrorAnnotationNamingTheJsonPath) {
  Harness harness;
  const std::string body = review_fixture(GetParam().fixture);
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  EXPECT_FALSE(result.evaluated);
  EXPECT_TRUE(result.found.empty());
  const auto doc = parse_json(result.body);
  EXPECT_TRUE(warnings_of(doc).empty());
  EXPECT_EQ(annotations_of(doc), (std::map<std::string, std::string>{{"error", GetParam().annotation}}));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, WrongMemberType,
    ::testing::Values(
        WrongTypeCase{"pod-containers-is-object", "not evaluated: request.object.spec.containers: expected an array"},
        WrongTypeCase{"pod-label-value-is-number",
                      "not evaluated: request.object.metadata.labels.replica-index: expected a string"},
        WrongTypeCase{"pod-toleration-seconds-is-string",
                      "not evaluated: request.object.spec.tolerations[1].tolerationSeconds: expected an integer"},
        WrongTypeCase{
            "pod-quantity-is-bool",
            "not evaluated: request.object.spec.containers[0].resources.limits.nvidia.com/gpu: expected a quantity"}),
    [](const auto& info) {
      std::string name = info.param.fixture;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(ReviewHandler, UnreadableEnvelopeMemberIsAllowedWithAnErrorAnnotation) {
  Harness harness;
  const std::string body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-7",)"
      R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","dryRun":"yes","object":{}}})";
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  EXPECT_EQ(annotations_of(parse_json(result.body)),
            (std::map<std::string, std::string>{{"error", "not evaluated: request.dryRun: expected a boolean"}}));
}

// Requests that carry no pod spec to judge: allowed, no warnings, no annotations.
class NothingToSay : public ::testing::TestWithParam<std::string> {};

TEST_P(NothingToSay, IsAllowedWithoutWarningsOrAnnotations) {
  Harness harness;
  const std::string body = review_fixture(GetParam());
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  EXPECT_EQ(result.error, "");
  EXPECT_TRUE(result.found.empty());
  const auto doc = parse_json(result.body);
  const auto& response = doc["response"];
  EXPECT_EQ(member(response, "warnings"), nullptr);
  EXPECT_EQ(member(response, "auditAnnotations"), nullptr);
  EXPECT_EQ(response.MemberCount(), 2u) << result.body;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NothingToSay,
                         ::testing::Values("configmap-create", "pod-delete", "pod-status-subresource", "nginx-pod",
                                           "kube-system-gpu-pod"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(ReviewHandler, NonPodKindsDeletesAndSubresourcesAreNotEvaluated) {
  Harness harness;
  for (const char* name : {"configmap-create", "pod-delete", "pod-status-subresource"}) {
    EXPECT_FALSE(harness.handle(review_fixture(name)).evaluated) << name;
  }
}

TEST(ReviewHandler, ResultCarriesTheRequestFactsForTheLogLine) {
  Harness harness;
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-gaps"));
  EXPECT_EQ(result.uid, "0f4e1b6a-3c1d-4a8e-9b52-7d2c1e9a4f10");
  EXPECT_EQ(result.kind, "Pod");
  EXPECT_EQ(result.namespace_name, "ml-research");
  EXPECT_EQ(result.name, "llm-pretrain-0");
  EXPECT_EQ(result.operation, "CREATE");
}

TEST(ReviewHandler, UidIsEchoedByteForByte) {
  Harness harness;
  const std::string body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"\"q\"\\\u00e9\u0001\/x"}})";
  const ReviewResult result = harness.handle(body);
  ASSERT_EQ(result.status, 200);
  const auto doc = parse_json(result.body);
  const auto& uid = doc["response"]["uid"];
  EXPECT_EQ(std::string(uid.GetString(), uid.GetStringLength()), "\"q\"\\\xC3\xA9\x01/x");
}

// ---------------------------------------------------------------------------------------
// Cluster view and policy

TEST(ReviewHandler, PdbSelectingThePodSilencesTheBudgetCheck) {
  PolicyStore policies{default_policy()};
  LabelSelector selector;
  selector.match_labels = {{"app", "llm-pretrain"}};
  StaticClusterView cluster{std::make_shared<const ClusterSnapshot>(
      std::vector<DisruptionBudget>{{"ml-research", "llm-pretrain", selector}}, std::vector<kubegap::NodeInfo>{})};
  const ReviewHandler handler{policies, cluster};
  const auto doc = parse_json(handler.handle(review_fixture("gpu-pod-gaps")).body);
  EXPECT_FALSE(annotations_of(doc).contains("disruption-budget"));
  EXPECT_EQ(warnings_of(doc).size(), 3u);
}

TEST(ReviewHandler, PdbInAnotherNamespaceOrWithANullSelectorLeavesThePodUnprotected) {
  PolicyStore policies{default_policy()};
  const auto snapshot = kubegap::parse_cluster_state(R"(
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: other-ns, namespace: team-b}
spec: {selector: {}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: null-selector, namespace: ml-research}
spec: {minAvailable: 1}
)",
                                                     "cluster.yaml");
  StaticClusterView cluster{snapshot};
  const ReviewHandler handler{policies, cluster};
  const ReviewResult result = handler.handle(review_fixture("gpu-pod-gaps"));
  EXPECT_EQ(result.found, (std::vector<std::string_view>{"checkpoint-volume", "disruption-budget", "zone-spread",
                                                         "gpu-health-tolerations"}));
  const auto warnings = warnings_of(parse_json(result.body));
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[1].rfind("kubegap/disruption-budget: no PodDisruptionBudget selects these pods", 0), 0u)
      << warnings[1];
  const std::string annotation =
      parse_json(result.body)["response"]["auditAnnotations"]["disruption-budget"].GetString();
  EXPECT_NE(annotation.find("no PodDisruptionBudget in namespace ml-research"), std::string::npos) << annotation;
}

TEST(ReviewHandler, ANewPolicyInTheStoreAppliesToTheNextReview) {
  Harness harness;
  Policy only_zone = default_policy();
  only_zone.enabled_checks = {"zone-spread"};
  harness.policies.set(only_zone);
  const ReviewResult result = harness.handle(review_fixture("gpu-pod-gaps"));
  EXPECT_EQ(result.found, (std::vector<std::string_view>{"zone-spread"}));
  EXPECT_EQ(finding_annotations(parse_json(result.body)).size(), 1u);

  Policy exclude = default_policy();
  exclude.excluded_namespaces = {"ml-research"};
  harness.policies.set(exclude);
  EXPECT_TRUE(harness.handle(review_fixture("gpu-pod-gaps")).found.empty());
}

// ---------------------------------------------------------------------------------------
// Hostile text in the pod: what reaches the API server stays a clean, short warning.

std::string with_hostile_text(const std::string& mount_path, const std::string& container_name,
                              const std::string& zone) {
  rapidjson::Document doc;
  EXPECT_FALSE(try_parse_json(review_fixture("gpu-pod-gaps"), doc).has_value());
  auto& a = doc.GetAllocator();
  auto& spec = doc["request"]["object"]["spec"];
  spec["containers"][0]["volumeMounts"][0]["mountPath"].SetString(
      mount_path.data(), static_cast<rapidjson::SizeType>(mount_path.size()), a);
  spec["containers"][0]["name"].SetString(container_name.data(),
                                          static_cast<rapidjson::SizeType>(container_name.size()), a);
  spec["nodeSelector"]["topology.kubernetes.io/zone"].SetString(zone.data(),
                                                                static_cast<rapidjson::SizeType>(zone.size()), a);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string repeat(std::string_view piece, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += piece;
  return out;
}

TEST(ReviewHandler, WarningsFromHostileMountPathsAreShortCleanUtf8) {
  Harness harness;
  const std::string mount_path = "/checkpoints\n\t\x1B[31m" + repeat("\xC3\xA9", 200) +
                                 "\xE6\x97\xA5\xE6\x9C\xAC\xC2\x85\x7F" + repeat("\xF0\x9F\x9A\x80", 50);
  const std::string body =
      with_hostile_text(mount_path, "trainer\r\nX-Injected: yes", "us-east-1a\n" + repeat("\xC3\xBC", 300));
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  const auto doc = parse_json(result.body);
  std::vector<std::string> warnings;
  for (const auto& w : warnings_of(doc)) {
    // A fix that does not fit beside the statement is a warning of its own.
    if (w.find(": fix: ") != std::string::npos && w.rfind(" (case ") == std::string::npos) {
      EXPECT_LE(scan_utf8(w).runes, 256u) << w;
      continue;
    }
    warnings.push_back(w);
  }
  ASSERT_EQ(warnings.size(), 3u);
  // Long messages are cut with "..." but keep the case citation whole.
  for (const auto& w : warnings) {
    EXPECT_LE(scan_utf8(w).runes, 256u) << w;
    EXPECT_TRUE(std::regex_search(w, std::regex(R"( \(case [a-z0-9-]+\)$)"))) << w;
  }
  EXPECT_NE(warnings[0].find("\xC3\xA9"), std::string::npos) << "multi-byte text is kept";
  EXPECT_NE(warnings[0].find("..."), std::string::npos) << warnings[0];
  EXPECT_EQ(scan_utf8(warnings[0]).runes, 256u) << "a cut warning uses the whole budget";
  EXPECT_NE(warnings[1].find("..."), std::string::npos) << warnings[1];
}

TEST(ReviewHandler, ErrorAnnotationNamingAHostileKeyIsCleanAndBounded) {
  Harness harness;
  const std::string head =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
      R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"labels":{")";
  // A label key of 100000 runes (multi-byte, with control characters) and a number value.
  const std::string key = "a\\nb\\u0007" + repeat("\xE6\x97\xA5", 100000);
  const std::string body = head + key + R"(":1}}}}})";
  const ReviewResult result = harness.handle(body);
  expect_valid_answer(body, result);
  const auto annotations = annotations_of(parse_json(result.body));
  ASSERT_TRUE(annotations.contains("error"));
  const std::string& value = annotations.at("error");
  EXPECT_EQ(value.rfind("not evaluated: request.object.metadata.labels.a?b?", 0), 0u) << value.substr(0, 80);
  EXPECT_LE(value.size(), kubegap::kMaxAnnotationValueBytes);
  EXPECT_TRUE(scan_utf8(value).valid);
}

TEST(ReviewHandler, CuttingAWarningNeverSplitsAMultiByteCharacter) {
  Harness harness;
  for (std::size_t n = 150; n < 260; ++n) {
    for (const char* piece : {"\xF0\x9F\x9A\x80", "\xE6\x97\xA5", "\xC3\xA9"}) {
      const std::string body = with_hostile_text("/ckpt/" + repeat(piece, n), "trainer", "us-east-1a");
      const ReviewResult result = harness.handle(body);
      ASSERT_EQ(result.status, 200);
      for (const auto& w : warnings_of(parse_json(result.body))) {
        const Utf8Scan scan = scan_utf8(w);
        ASSERT_TRUE(scan.valid) << "n=" << n << ": " << w;
        ASSERT_LE(scan.runes, 256u) << "n=" << n;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Bodies that are not AdmissionReviews: 400 with a JSON error body.

struct BadBody {
  const char* name;
  std::string body;
};

class NotAReview : public ::testing::TestWithParam<BadBody> {};

TEST_P(NotAReview, Gets400WithAJsonErrorBody) {
  Harness harness;
  const ReviewResult result = harness.handle(GetParam().body);
  EXPECT_EQ(result.status, 400);
  EXPECT_EQ(result.uid, "");
  EXPECT_NE(result.error, "");
  const auto doc = parse_json(result.body);
  ASSERT_TRUE(doc.IsObject()) << result.body;
  ASSERT_NE(member(doc, "error"), nullptr) << result.body;
  EXPECT_EQ(str(doc["error"]).rfind("not an AdmissionReview: ", 0), 0u) << result.body;
  EXPECT_EQ(member(doc, "response"), nullptr);
}

std::string envelope(const std::string& api_version, const std::string& kind, const std::string& request) {
  return R"({"apiVersion":")" + api_version + R"(","kind":")" + kind + R"(","request":)" + request + "}";
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, NotAReview,
    ::testing::Values(
        BadBody{"not_json", "this is not json"}, BadBody{"empty", ""},
        BadBody{"json_array", R"([{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}])"},
        BadBody{"json_number", "42"},
        BadBody{"kind_not_admission_review", envelope("admission.k8s.io/v1", "AdmissionResponse", R"({"uid":"u"})")},
        BadBody{"api_version_unknown", envelope("admission.k8s.io/v2", "AdmissionReview", R"({"uid":"u"})")},
        BadBody{"request_missing", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"},
        BadBody{"uid_missing", envelope("admission.k8s.io/v1", "AdmissionReview", R"({"operation":"CREATE"})")},
        BadBody{"uid_empty", envelope("admission.k8s.io/v1", "AdmissionReview", R"({"uid":""})")},
        BadBody{"uid_number", envelope("admission.k8s.io/v1", "AdmissionReview", R"({"uid":7})")},
        BadBody{"invalid_utf8", envelope("admission.k8s.io/v1", "AdmissionReview", "{\"uid\":\"u\xFE\xFF\"}")},
        BadBody{"invalid_utf8_in_object",
                envelope("admission.k8s.io/v1", "AdmissionReview",
                         "{\"uid\":\"u\",\"object\":{\"metadata\":{\"name\":\"\x80\x80\"}}}")},
        BadBody{"deep_unclosed_nesting", std::string(100000, '[')},
        BadBody{"deep_closed_nesting", std::string(100000, '[') + std::string(100000, ']')},
        BadBody{"deep_object_nesting", repeat(R"({"a":)", 100000)}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ReviewHandler, DeepNestingInsideAReviewIsAnsweredCleanly) {
  Harness harness;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string head = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep-1",)"
                           R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"ml",)";

  // In a member nobody reads: evaluated as usual (a plain pod: nothing to say).
  const std::string ignored = head + R"("object":{"spec":{"containers":[{"name":"c"}]},"status":)" + deep + "}}}";
  const ReviewResult quiet = harness.handle(ignored);
  expect_valid_answer(ignored, quiet);
  EXPECT_TRUE(quiet.evaluated);

  // In a member that is read: 200 and an error annotation naming it.
  const std::string read = head + R"("object":{"metadata":{"labels":)" + deep + "}}}}";
  const ReviewResult broken = harness.handle(read);
  expect_valid_answer(read, broken);
  EXPECT_EQ(annotations_of(parse_json(broken.body)),
            (std::map<std::string, std::string>{
                {"error", "not evaluated: request.object.metadata.labels: expected an object"}}));
}

}  // namespace
}  // namespace kgtest
