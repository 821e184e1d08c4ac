// PolicyReports from a report: one per namespace, one result per (object, check), the
// golden YAML a reviewer reads (tests/fixtures/policyreport/).
#include "webhook/report/policy_report.h"

#include <gtest/gtest.h>

#include <string>

#include "policies/policy.h"
#include "test_util.h"
#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

// Two namespaces: a PyTorchJob with gaps and an exempted check, a good GPU pod with its
// PDB and Nodes in two zones, and a CPU pod that is not training (no results).
constexpr const char* kManifests = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm
  namespace: ml
  uid: 6f1c-llm
  annotations:
    kubegap.io/exempt: zone-spread
    kubegap.io/exempt-reason: the data set lives in one zone
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          nodeSelector: {topology.kubernetes.io/zone: us-east-1a}
          containers:
            - name: trainer
              image: pytorch
              command: [torchrun, train.py]
              resources: {limits: {nvidia.com/gpu: 8}}
              volumeMounts: [{name: ckpt, mountPath: /checkpoints}]
          volumes: [{name: ckpt, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: research, uid: 9a2e-good, labels: {app: good}}
spec:
  tolerations:
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
  containers:
    - name: trainer
      image: pytorch
      command: [torchrun, train.py]
      resources: {limits: {nvidia.com/gpu: 1}}
      volumeMounts: [{name: ckpt, mountPath: /checkpoints}]
  volumes: [{name: ckpt, persistentVolumeClaim: {claimName: ckpt}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: research}
spec:
  containers: [{name: nginx, image: nginx}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: good, namespace: research}
spec: {minAvailable: 1, selector: {matchLabels: {app: good}}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: a}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {topology.kubernetes.io/zone: b}}
)";

std::vector<PolicyReportObject> reports(ReportFlavour flavour = ReportFlavour::kWgPolicy) {
  const CheckReport report = check_text(kManifests, "manifests.yaml", default_policy());
  EXPECT_TRUE(report.errors.empty());
  return build_policy_reports(report, flavour, 1764806400);
}

void expect_yaml_golden(const PolicyReportObject& report, const std::string& relative) {
  rapidjson::Document doc = kgtest::parse_json(report.json);
  const std::string yaml = json_to_yaml(doc);
  const std::string path = kgtest::fixture_path(relative);
  if (kgtest::update_golden()) {
    kgtest::write_text(path, yaml);
    return;
  }
  const auto golden = kgtest::read_text(path);
  ASSERT_TRUE(golden.has_value()) << "missing " << path << " (KUBEGAP_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(yaml, *golden) << "differs from " << path;
}

TEST(PolicyReports, OnePerNamespaceSortedAndNoneForObjectsThatAreNotTraining) {
  const auto out = reports();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].namespace_name, "ml");
  EXPECT_EQ(out[1].namespace_name, "research");
  EXPECT_EQ(out[0].kind, "PolicyReport");
  EXPECT_EQ(out[0].api_version, "wgpolicyk8s.io/v1alpha2");
  // research: the good pod's five checks; the nginx pod has none.
  EXPECT_EQ(out[1].pass + out[1].fail + out[1].skip, 5u);
  EXPECT_EQ(out[1].fail, 0u);
  EXPECT_EQ(out[1].json.find("\"web\""), std::string::npos);
}

TEST(PolicyReports, FindingsFailExemptionsSkipTheRestPass) {
  const auto out = reports();
  ASSERT_FALSE(out.empty());
  // ml: checkpoint-volume, disruption-budget and gpu-health-tolerations fail;
  // zone-spread is exempted (skip); restart-on-failure passes (a PyTorchJob's replicas
  // restart OnFailure by default, with no backoff limit).
  EXPECT_EQ(out[0].fail, 3u);
  EXPECT_EQ(out[0].skip, 1u);
  EXPECT_EQ(out[0].pass, 1u);
}

TEST(PolicyReports, MatchTheGoldenYaml) {
  const auto out = reports();
  ASSERT_EQ(out.size(), 2u);
  expect_yaml_golden(out[0], "policyreport/ml.yaml");
  expect_yaml_golden(out[1], "policyreport/research.yaml");
}

TEST(PolicyReports, OpenReportsFlavourHasItsOwnGroupAndKind) {
  const auto out = reports(ReportFlavour::kOpenReports);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].api_version, "openreports.io/v1alpha1");
  EXPECT_EQ(out[0].kind, "Report");
  EXPECT_EQ(report_resource(ReportFlavour::kOpenReports, true), "clusterreports");
  EXPECT_EQ(report_resource(ReportFlavour::kWgPolicy, false), "policyreports");
}

TEST(JsonToYaml, QuotesStringsYamlWouldReadAsOtherTypes) {
  rapidjson::Document doc = kgtest::parse_json(R"({"a":"true","b":"1","c":true,"d":7,"e":["x"],"f":{}})");
  const std::string yaml = json_to_yaml(doc);
  // Read back, every type is what JSON said.
  EXPECT_NE(yaml.find("a: \"true\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("b: \"1\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("c: true"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("d: 7"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace kubegap
