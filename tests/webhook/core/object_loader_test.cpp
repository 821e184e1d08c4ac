// The one loader of "a file of Kubernetes objects" (load_objects), shared by `check` and
// --cluster-state: YAML merge keys, the line of the field a decoder's error names, one
// bad document costing only itself, Lists and AdmissionReviews; and the quantities of
// container resources (absent, not a quantity) as the webhook and `check` read them.
#include "webhook/core/object_loader.h"

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "tests/webhook/test_util.h"
#include "webhook/core/object_evaluation.h"
#include "webhook/core/review_handler.h"
#include "webhook/report/offline_check.h"
#include "webhook/report/report_render.h"

namespace kgtest {
namespace {

using kubegap::InputProblem;
using kubegap::KubeObject;
using kubegap::LoadedObjects;

LoadedObjects load(const std::string& text, const std::string& file = "in.yaml") {
  LoadedObjects loaded;
  kubegap::load_objects(text, file, loaded);
  return loaded;
}

std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return buffer.GetString();
}

// only_object: the JSON of the one object of `text`, or a failure.
std::string only_object(const std::string& text) {
  const LoadedObjects loaded = load(text);
  EXPECT_TRUE(loaded.problems.empty()) << (loaded.problems.empty() ? "" : loaded.problems.front().text());
  EXPECT_EQ(loaded.objects.size(), 1u);
  return loaded.objects.empty() ? "" : compact(*loaded.objects.front().json);
}

std::string problems_of(const LoadedObjects& loaded) {
  std::string out;
  for (const InputProblem& p : loaded.problems) out += p.text() + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------
// Merge keys (YAML 1.1, https://yaml.org/type/merge.html): yaml-cpp 0.7 leaves `<<` a
// plain key, so a manifest that shares a replica spec through it would lose that spec.

TEST(ObjectLoaderMergeKeys, MergedMembersAreExpandedAndExplicitKeysWin) {
  EXPECT_EQ(only_object(R"(apiVersion: v1
kind: Pod
base: &base {a: 1, b: from-base}
metadata:
  <<: *base
  b: explicit
)"),
            R"({"apiVersion":"v1","kind":"Pod","base":{"a":1,"b":"from-base"},"metadata":{"b":"explicit","a":1}})");
}

TEST(ObjectLoaderMergeKeys, ExplicitKeysWinAlsoWhenWrittenBeforeTheMerge) {
  EXPECT_EQ(only_object("apiVersion: v1\nkind: Pod\nb: &b {x: 1, y: 1}\nm: {y: 2, <<: *b}\n"),
            R"({"apiVersion":"v1","kind":"Pod","b":{"x":1,"y":1},"m":{"y":2,"x":1}})");
}

TEST(ObjectLoaderMergeKeys, OfASequenceOfMappingsTheEarlierWins) {
  EXPECT_EQ(
      only_object(R"(apiVersion: v1
kind: Pod
one: &one {x: 1, y: 1}
two: &two {y: 2, z: 2}
m:
  <<: [*one, *two]
  w: 0
)"),
      R"({"apiVersion":"v1","kind":"Pod","one":{"x":1,"y":1},"two":{"y":2,"z":2},"m":{"w":0,"x":1,"y":1,"z":2}})");
}

TEST(ObjectLoaderMergeKeys, MergesInsideMergedMappingsAreExpandedToo) {
  EXPECT_EQ(only_object("apiVersion: v1\nkind: Pod\na: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b}\n"),
            R"({"apiVersion":"v1","kind":"Pod","a":{"x":1},"b":{"y":2,"x":1},"c":{"y":2,"x":1}})");
}

TEST(ObjectLoaderMergeKeys, AQuotedMergeKeyIsAnOrdinaryKey) {
  EXPECT_EQ(only_object("apiVersion: v1\nkind: Pod\nm: {\"<<\": {x: 1}}\n"),
            R"({"apiVersion":"v1","kind":"Pod","m":{"<<":{"x":1}}})");
}

TEST(ObjectLoaderMergeKeys, AMergedReplicaOfAWorkloadIsEvaluated) {
  const LoadedObjects loaded = load(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: merged, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: &replica
      replicas: 1
      template:
        spec:
          containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 8}}}]
          nodeSelector: {topology.kubernetes.io/zone: z1}
    Worker:
      <<: *replica
      replicas: 3
)");
  ASSERT_EQ(loaded.objects.size(), 1u) << problems_of(loaded);
  const kubegap::Policy policy = kubegap::default_policy();
  const kubegap::WorkloadKind* row = policy.workload_kind("kubeflow.org", "PyTorchJob");
  ASSERT_NE(row, nullptr);
  const auto evaluation = kubegap::evaluate_object(*loaded.objects[0].json, "PyTorchJob", *row, "default", nullptr,
                                                   policy, "no cluster view");
  ASSERT_EQ(evaluation.error, "");
  bool zone_finding = false;
  for (const auto& f : evaluation.findings) {
    if (f.check != "zone-spread") continue;
    zone_finding = true;
    EXPECT_EQ(f.parts, (std::vector<std::string>{"replica Master", "replica Worker"}));
  }
  EXPECT_TRUE(zone_finding);
}

TEST(ObjectLoaderMergeKeys, AMergeOfAScalarIsAProblemOfThatDocumentOnly) {
  const LoadedObjects loaded = load("apiVersion: v1\nkind: Pod\nm:\n  <<: 5\n---\napiVersion: v1\nkind: Pod\n");
  EXPECT_EQ(problems_of(loaded),
            "in.yaml:4: merge key <<: expected a mapping or a sequence of mappings (an alias such as *base)\n");
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects[0].line, 6);
}

TEST(ObjectLoaderMergeKeys, MergeBombsAreRefusedByTheNodeBudget) {
  // Each level merges the previous one ten times over distinct keys: 10^12 members.
  std::string text =
      "apiVersion: v1\nkind: Pod\nl0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n";
  for (int i = 1; i < 12; ++i) {
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {";
    for (int j = 0; j < 10; ++j) {
      text += std::string(j ? ", " : "") + "k" + std::to_string(j) + ": *l" + std::to_string(i - 1);
    }
    text += ", <<: *l" + std::to_string(i - 1) + "}\n";
  }
  const LoadedObjects loaded = load(text, "bomb.yaml");
  EXPECT_TRUE(loaded.objects.empty());
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_NE(loaded.problems[0].message.find("too many nodes"), std::string::npos) << loaded.problems[0].message;
}

TEST(ObjectLoaderMergeKeys, MergeBombsOfEmptyMappingsAreRefusedToo) {
  // The security review's 646-byte file: eight levels, each merging the one below ten
  // times, over {}: no member is ever merged, yet the levels are visited 10^8 times (45 s
  // of CPU before each merged mapping was charged). Now refused within the budget.
  const std::string text = alias_bomb("apiVersion: v1\nkind: Pod\n", true);
  const auto started = std::chrono::steady_clock::now();
  const LoadedObjects loaded = load(text, "bomb.yaml");
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(loaded.objects.empty());
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_NE(loaded.problems[0].message.find("too many nodes"), std::string::npos) << loaded.problems[0].message;
  // Not a timing assertion: printed, so a regression shows its cost in the log.
  std::printf("merge bomb of empty mappings refused in %.3f s\n", std::chrono::duration<double>(took).count());
}

// A bomb costs only its own document (issue 31): held to its part's share of the budget,
// it leaves the documents around it theirs, so the rest of the file is still reported.
// Both bombs of the security review, among ordinary documents.
TEST(ObjectLoaderMergeKeys, ABombAmongDocumentsCostsOnlyItsOwn) {
  const std::string pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec: {containers: [{name: c}]}\n";
  const auto named = [&](const std::string& name) {
    return pod.substr(0, pod.find("NAME")) + name + pod.substr(pod.find("NAME") + 4);
  };
  for (const bool merge : {true, false}) {
    const std::string bomb = alias_bomb("apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\n", merge);
    const std::string text = named("before") + "---\n" + bomb + "---\n" + named("after") + "---\n" + named("last");
    const LoadedObjects loaded = load(text, "bomb.yaml");
    std::vector<std::string> names;
    for (const auto& object : loaded.objects) names.emplace_back((*object.json)["metadata"]["name"].GetString());
    EXPECT_EQ(names, (std::vector<std::string>{"before", "after", "last"})) << (merge ? "merge bomb" : "alias bomb");
    ASSERT_EQ(loaded.problems.size(), 1u) << problems_of(loaded);
    EXPECT_EQ(loaded.problems[0].file, "bomb.yaml");
    EXPECT_GT(loaded.problems[0].line, 5) << "the line is in the bomb's document, not the first";
    EXPECT_NE(loaded.problems[0].message.find("too many nodes"), std::string::npos) << loaded.problems[0].message;
  }
}

// Many small merges, as a templated manifest may have (2,000 mappings merging a base of
// three keys): linear work, well within the budget, read in full.
TEST(ObjectLoaderMergeKeys, ManySmallMergesAreRead) {
  std::string text =
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: merges}\nbase: &base {a: 1, b: 2, c: 3}\nitems:\n";
  for (int i = 0; i < 2000; ++i) text += "  - {<<: *base, id: " + std::to_string(i) + "}\n";
  const LoadedObjects loaded = load(text);
  EXPECT_TRUE(loaded.problems.empty()) << problems_of(loaded);
  ASSERT_EQ(loaded.objects.size(), 1u);
}

TEST(ObjectLoaderMergeKeys, ASelfMergeIsRefusedNotLooped) {
  const LoadedObjects loaded = load("apiVersion: v1\nkind: Pod\nm: &m {a: 1, <<: *m}\n");
  EXPECT_TRUE(loaded.objects.empty());
  EXPECT_EQ(loaded.problems.size(), 1u) << problems_of(loaded);
}

// ---------------------------------------------------------------------------------------
// The line of the offending field: decoders name a JSON path, the loader maps it back.

// decode_error: the decoder's error for the object, and its line.
std::pair<std::string, int> decode_error(const KubeObject& object) {
  const kubegap::Policy policy = kubegap::default_policy();
  const kubegap::WorkloadKind* row = policy.workload_kind("", object.kind);
  EXPECT_NE(row, nullptr) << object.kind;
  if (row == nullptr) return {"", 0};
  const auto evaluation =
      kubegap::evaluate_object(*object.json, object.kind, *row, "default", nullptr, policy, "no cluster view");
  return {evaluation.error, object.field_line(evaluation.error, object.kind)};
}

TEST(ObjectLoaderFieldLines, ATypeErrorPointsAtItsFieldNotAtTheObject) {
  const LoadedObjects loaded = load(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      resources:
        limits:
          nvidia.com/gpu: [1]
)");
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects[0].line, 1);
  EXPECT_EQ(
      decode_error(loaded.objects[0]),
      std::make_pair(std::string("Pod.spec.containers[0].resources.limits.nvidia.com/gpu: expected a quantity"), 10));
}

TEST(ObjectLoaderFieldLines, AFieldOfAListItemInALaterDocument) {
  const LoadedObjects loaded = load(R"(# comment
apiVersion: v1
kind: ConfigMap
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: ok}
  - apiVersion: v1
    kind: Pod
    metadata:
      name: bad
      labels: [x]
)");
  ASSERT_EQ(loaded.objects.size(), 3u) << problems_of(loaded);
  EXPECT_EQ(loaded.objects[1].line, 8);
  EXPECT_EQ(loaded.objects[2].line, 11);
  EXPECT_EQ(loaded.objects[2].path, "items[1]");
  EXPECT_EQ(decode_error(loaded.objects[2]),
            std::make_pair(std::string("Pod.metadata.labels: expected an object"), 15));
}

TEST(ObjectLoaderFieldLines, AFieldFromAMergedMappingPointsAtItsDefinition) {
  const LoadedObjects loaded = load(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
x-base: &base
  containers: {name: c}
spec:
  <<: *base
)");
  ASSERT_EQ(loaded.objects.size(), 1u) << problems_of(loaded);
  EXPECT_EQ(decode_error(loaded.objects[0]), std::make_pair(std::string("Pod.spec.containers: expected an array"), 6));
}

TEST(ObjectLoaderFieldLines, AnUnknownPathFallsBackToItsNearestAncestor) {
  const LoadedObjects loaded = load("apiVersion: v1\nkind: Pod\nspec:\n  a: 1\n");
  ASSERT_EQ(loaded.objects.size(), 1u);
  const KubeObject& o = loaded.objects[0];
  EXPECT_EQ(o.field_line("Pod.spec.a: bad", "Pod"), 4);
  EXPECT_EQ(o.field_line("Pod.spec.missing[3].x: bad", "Pod"), 3);
  EXPECT_EQ(o.field_line("Pod: bad", "Pod"), 1);
  EXPECT_EQ(o.field_line("Other.spec: bad", "Pod"), 1);
}

TEST(ObjectLoaderFieldLines, JsonPathsOfMemberNamesWithDotsMatch) {
  // "nvidia.com/gpu" renders with its dots: the loader's keys are rendered the same way.
  const LoadedObjects loaded = load("{\"apiVersion\": \"v1\",\n \"kind\": \"Pod\",\n \"a.b\": {\n  \"c\": 1}}\n");
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects[0].field_line("Pod.a.b.c: bad", "Pod"), 4);
  EXPECT_EQ(loaded.objects[0].field_line("Pod.a.b: bad", "Pod"), 3);
}

// ---------------------------------------------------------------------------------------
// Documents, Lists, AdmissionReviews.

// JSON documents are parsed by RapidJSON, not yaml-cpp (a quarter of the memory). What they
// yield must be what the YAML path yields: the same objects, values and field lines. A
// leading comment sends the same text down the YAML path.
TEST(ObjectLoaderJson, AJsonDocumentLoadsAsTheYamlPathLoadsIt) {
  const std::string json = R"({
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {"apiVersion": "v1", "kind": "Node",
     "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1", "a.b": "c"}},
     "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "x"}]}},
    {
      "apiVersion": "policy/v1",
      "kind": "PodDisruptionBudget",
      "metadata": {"name": "b", "namespace": "ml"},
      "spec": {"maxUnavailable": 0, "minAvailable": 1.5, "big": 12345678901, "neg": -3,
               "flags": [true, false, null, "s\u00e9", []],
               "selector": {"matchLabels": {"app": "x"}}}
    }
  ]
})";
  const LoadedObjects fast = load("\n" + json);
  const LoadedObjects yaml = load("# via yaml-cpp\n" + json);
  ASSERT_EQ(problems_of(fast), "");
  ASSERT_EQ(problems_of(yaml), "");
  ASSERT_EQ(fast.objects.size(), 2u);
  ASSERT_EQ(yaml.objects.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(compact(*fast.objects[i].json), compact(*yaml.objects[i].json)) << i;
    EXPECT_EQ(fast.objects[i].line, yaml.objects[i].line) << i;
    EXPECT_EQ(fast.objects[i].kind, yaml.objects[i].kind);
  }
  EXPECT_EQ(fast.objects[0].document->field_lines, yaml.objects[0].document->field_lines);
  EXPECT_EQ(fast.objects[0].line, 6);
  EXPECT_EQ(fast.objects[1].line, 9);
  EXPECT_EQ(fast.objects[1].field_line("PodDisruptionBudget.spec.selector: expected an object", "PodDisruptionBudget"),
            15);
}

TEST(ObjectLoaderJson, BrokenJsonIsReportedAsBeforeAndCostsOnlyItsDocument) {
  const LoadedObjects loaded = load(
      "{\"kind\": \"Pod\", \"apiVersion\": \"v1\",\n \"metadata\": {\"name\": }\n---\n"
      "{\"kind\": \"Pod\", \"apiVersion\": \"v1\", \"metadata\": {\"name\": \"ok\"}}\n");
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_NE(loaded.problems.front().text().find("in.yaml:3: invalid YAML: end of map flow not found"),
            std::string::npos)
      << problems_of(loaded);
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects.front().line, 4);
}

TEST(ObjectLoaderDocuments, ASyntaxErrorCostsOnlyItsDocument) {
  const LoadedObjects loaded = load(R"(apiVersion: v1
kind: Pod
metadata: {name: first}
---
apiVersion: v1
kind: Pod
metadata:
    name: broken
  namespace: x
---
apiVersion: v1
kind: Pod
metadata: {name: third}
)");
  ASSERT_EQ(loaded.objects.size(), 2u);
  EXPECT_EQ(loaded.objects[0].line, 1);
  EXPECT_EQ(loaded.objects[1].line, 11);
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_EQ(loaded.problems[0].line, 9);
  EXPECT_EQ(loaded.problems[0].message.rfind("invalid YAML", 0), 0u) << loaded.problems[0].message;
}

TEST(ObjectLoaderDocuments, DirectivesAndCommentsBeforeTheFirstMarkerStayWithIt) {
  const LoadedObjects loaded =
      load("%YAML 1.2\n# c\n---\napiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Node\n");
  EXPECT_EQ(problems_of(loaded), "");
  ASSERT_EQ(loaded.objects.size(), 2u);
  EXPECT_EQ(loaded.objects[0].line, 4);
  EXPECT_EQ(loaded.objects[1].line, 7);
}

TEST(ObjectLoaderDocuments, TypedListItemsTakeTheKindAndApiVersionOfTheList) {
  const LoadedObjects loaded = load(R"({"apiVersion": "policy/v1", "kind": "PodDisruptionBudgetList",
  "items": [
    {"metadata": {"name": "a"}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}}]})");
  ASSERT_EQ(loaded.objects.size(), 2u);
  for (const auto& o : loaded.objects) {
    EXPECT_EQ(o.kind, "PodDisruptionBudget");
    EXPECT_EQ(o.api_version, "policy/v1");
  }
  EXPECT_EQ(loaded.objects[0].line, 3);
  EXPECT_EQ(loaded.objects[1].line, 4);
}

TEST(ObjectLoaderDocuments, AnAdmissionReviewYieldsItsRequestObject) {
  const LoadedObjects loaded = load(R"(apiVersion: admission.k8s.io/v1
kind: AdmissionReview
request:
  uid: u
  object:
    apiVersion: v1
    kind: Pod
    metadata: {name: captured}
)");
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects[0].kind, "Pod");
  EXPECT_EQ(loaded.objects[0].path, "request.object");
  EXPECT_EQ(loaded.objects[0].line, 5);
  EXPECT_EQ(problems_of(load("kind: AdmissionReview\nrequest: {uid: u}\n")),
            "in.yaml:1: AdmissionReview without request.object\n");
}

TEST(ObjectLoaderDocuments, ObjectsWithoutKindAreYieldedForTheCallerToJudge) {
  const LoadedObjects loaded = load("metadata: {name: x}\n");
  ASSERT_EQ(loaded.objects.size(), 1u);
  EXPECT_EQ(loaded.objects[0].kind, "");
  EXPECT_EQ(loaded.objects[0].api_version, "");
}

// ---------------------------------------------------------------------------------------
// Quantities of container resources.

kubegap::ObjectEvaluation pod_with_gpu(const std::string& quantity) {
  const std::string text =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "    - name: c\n      resources:\n        limits:\n          nvidia.com/gpu: " +
      quantity + "\n";
  const LoadedObjects loaded = load(text);
  EXPECT_EQ(loaded.objects.size(), 1u) << problems_of(loaded);
  const kubegap::Policy policy = kubegap::default_policy();
  return kubegap::evaluate_object(*loaded.objects.at(0).json, "Pod", *policy.workload_kind("", "Pod"), "default",
                                  nullptr, policy, "no cluster view");
}

bool requests_an_accelerator(const kubegap::ObjectEvaluation& evaluation) {
  for (const auto& f : evaluation.findings) {
    if (f.check == "gpu-health-tolerations") return true;  // accelerator pods only
  }
  return false;
}

TEST(ResourceQuantities, NullOrEmptyIsAbsentNotAnError) {
  for (const char* quantity : {"", "~", "null", "\"\"", "''"}) {
    const auto evaluation = pod_with_gpu(quantity);
    EXPECT_EQ(evaluation.error, "") << quantity;
    EXPECT_FALSE(requests_an_accelerator(evaluation)) << quantity;
  }
}

TEST(ResourceQuantities, KubernetesQuantitySyntaxIsARequest) {
  for (const char* quantity :
       {"1",   "\"2\"", "8",  "1.5", "\"+1\"", ".5", "1.", "500m", "1k",  "1Ki",  "1.5Gi", "2Mi",    "1Ti",
        "1Pi", "1Ei",   "1M", "1G",  "1T",     "1P", "1E", "1e3",  "1E3", "1e+3", "1e-3",  "\"1e3\""}) {
    const auto evaluation = pod_with_gpu(quantity);
    EXPECT_EQ(evaluation.error, "") << quantity;
    EXPECT_TRUE(requests_an_accelerator(evaluation)) << quantity;
  }
}

TEST(ResourceQuantities, AnythingElseIsNotAQuantity) {
  for (const char* quantity :
       {"\"{{ .Values.gpus }}\"", "eight", "1.2.3", "1e", "\"1 Gi\"", "1KiB", "1gi", "1e3.5", "0x10", "\"$\"",
        "\"${}\"", "\"$1GPU\"", "\"${A B}\"", "\"$GPUS-1\"", "\"e-10\"", "\"1e+\""}) {
    const auto evaluation = pod_with_gpu(quantity);
    EXPECT_EQ(evaluation.error, "Pod.spec.containers[0].resources.limits.nvidia.com/gpu: not a quantity") << quantity;
  }
}

// Issue 29, found by the differential oracle (tests/oracle) against resource.ParseQuantity:
// Kubernetes accepts these, so they are no input error; the sign does not make zero
// non-zero, and a number without digits is zero.
TEST(ResourceQuantities, WhatParseQuantityAcceptsIsAQuantity) {
  for (const char* zero : {"Gi", "\".\"", "\"-\"", "\"+\"", "\"-0\"", "\"-0.0Gi\"", "\"-.0m\"", "\"0n\"", "\"e3\""}) {
    const auto evaluation = pod_with_gpu(zero);
    EXPECT_EQ(evaluation.error, "") << zero;
    EXPECT_FALSE(requests_an_accelerator(evaluation)) << zero << " is zero";
  }
  for (const char* some : {"\"1n\"", "\"500u\"", "\"1e-3\"", "\".5\""}) {
    const auto evaluation = pod_with_gpu(some);
    EXPECT_EQ(evaluation.error, "") << some;
    EXPECT_TRUE(requests_an_accelerator(evaluation)) << some << " is more than zero";
  }
}

// An envsubst template's variable ($GPU_PER_NODE, ${GPUS}, Katib's
// ${trialParameters.gpus}) is set at deploy time: the resource counts as requested and a
// note names the placeholder, so the object is judged rather than dropped.
TEST(ResourceQuantities, APlaceholderIsARequestWithANote) {
  for (const char* quantity : {"\"$GPU_PER_NODE\"", "\"${GPUS}\"", "\"${trialParameters.gpus}\""}) {
    const auto evaluation = pod_with_gpu(quantity);
    EXPECT_EQ(evaluation.error, "") << quantity;
    EXPECT_TRUE(requests_an_accelerator(evaluation)) << quantity;
    const auto note = std::find_if(evaluation.findings.begin(), evaluation.findings.end(),
                                   [](const kubegap::Finding& f) { return f.check == kubegap::kInputNote; });
    ASSERT_NE(note, evaluation.findings.end()) << quantity;
    EXPECT_EQ(note->outcome, kubegap::Outcome::kNote);
    EXPECT_NE(note->reason.find("resource nvidia.com/gpu is $"), std::string::npos) << note->reason;
    EXPECT_NE(note->reason.find("placeholder"), std::string::npos) << note->reason;
  }
}

// pod_review: the webhook's answer, with the default policy and no cluster view, to the
// CREATE of Pod ml/p with this spec.
kubegap::ReviewResult pod_review(const std::string& spec) {
  kubegap::PolicyStore policies{kubegap::default_policy()};
  kubegap::NoClusterView no_cluster;
  const kubegap::ReviewHandler handler{policies, no_cluster};
  return handler.handle(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
    "request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},
    "resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE",
    "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":)" +
                        spec + "}}}");
}

TEST(ResourceQuantities, TheWebhookJudgesAPlaceholderAndNotesIt) {
  const auto result =
      pod_review(R"({"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"$GPU_PER_NODE"}}}]})");
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(result.evaluated);
  const auto doc = parse_json(result.body);
  const auto* annotations = member(doc["response"], "auditAnnotations");
  ASSERT_NE(annotations, nullptr) << result.body;
  ASSERT_NE(member(*annotations, "input"), nullptr) << result.body;
  EXPECT_EQ(str((*annotations)["input"]),
            "note: resource nvidia.com/gpu is $GPU_PER_NODE (a placeholder, read as requested)");
}

// An output directory taken from a ConfigMap the review does not carry (valueFrom) is a
// place nobody can see from the object: not evaluated, never a guessed warning.
TEST(EnvSources, AnOutputDirectoryFromAConfigMapIsNotEvaluated) {
  const auto result = pod_review(R"J({"containers":[{"name":"c",
      "command":["torchrun","grpo.py","--output_dir","$(OUT)"],
      "env":[{"name":"OUT","valueFrom":{"configMapKeyRef":{"name":"rl-config","key":"out"}}}],
      "resources":{"limits":{"nvidia.com/gpu":"8"}}}]})J");
  EXPECT_EQ(result.status, 200);
  const auto doc = parse_json(result.body);
  if (const auto* warnings = member(doc["response"], "warnings"); warnings != nullptr && warnings->IsArray()) {
    for (const auto& w : warnings->GetArray()) EXPECT_EQ(str(w).find("checkpoint"), std::string::npos) << str(w);
  }
  const auto* annotations = member(doc["response"], "auditAnnotations");
  ASSERT_NE(annotations, nullptr) << result.body;
  ASSERT_NE(member(*annotations, "checkpoint-volume"), nullptr) << result.body;
  EXPECT_EQ(
      str((*annotations)["checkpoint-volume"]),
      "not evaluated: checkpoints go to $(OUT) (set from ConfigMap rl-config), a place this object does not show");
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// A ',' token at document level (after a flow collection, a quoted scalar, a block
// sequence, or alone) stalls yaml-cpp 0.7's LoadAll
// (null documents without end: issue #1040). Found by tests/fuzz (check_fuzz): it is an
// invalid-YAML problem at its line, and costs only its own document.
TEST(ObjectLoaderYamlCppStall, StrayCommaIsAProblemNotAHang) {
  for (const std::string text :
       {"{},", "[1] ,", "{a: 1},{b: 2}", "!!map {},", "&a {},", "--- {}\n,\n", ",", "# c\n,", "\"x\",", "- a\n,"}) {
    const LoadedObjects loaded = load(text);
    ASSERT_EQ(loaded.problems.size(), 1u) << text;
    EXPECT_NE(loaded.problems.front().message.find("invalid YAML"), std::string::npos) << problems_of(loaded);
  }
  const LoadedObjects loaded =
      load("apiVersion: v1\nkind: Pod\n---\n{\"kind\": \"Node\"},\n---\napiVersion: v1\nkind: Node\n");
  EXPECT_EQ(problems_of(loaded), "in.yaml:4: invalid YAML: unexpected ',' where a document or its end should be\n");
  EXPECT_EQ(loaded.objects.size(), 2u);
}

// check_text (the fuzz target's way into `check`): one file's text gives the report
// check_paths gives for that file.
TEST(CheckText, GivesTheReportOfCheckPathsOnTheSameFile) {
  for (const std::string name : {"single/job-and-pdb.yaml", "mixed/broken.yaml", "invalid/empty.yaml"}) {
    const std::string path = fixture_path("check/" + name);
    const auto text = read_text(path);
    ASSERT_TRUE(text.has_value()) << path;
    const auto& policy = kubegap::default_policy();
    EXPECT_EQ(kubegap::render_json(kubegap::check_text(*text, path, policy)),
              kubegap::render_json(kubegap::check_paths({path}, policy)))
        << name;
  }
}

}  // namespace
}  // namespace kgtest
