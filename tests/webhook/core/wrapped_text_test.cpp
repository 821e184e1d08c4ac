// Objects kept as text inside another (webhook/core/wrapped_text.h), and objects whose pod
// templates are not where their row looks: Katib v1alpha3 Go template trials, Katib trial
// templates in ConfigMaps, KubeDL Cron's kind written inside the workload, and another
// version of a training kind (MXJob v1alpha1). Through `check`, as people run it.
#include "webhook/core/wrapped_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "webhook/core/policy_loader.h"
#include "webhook/report/offline_check.h"

namespace kgtest {
namespace {

using kubegap::neutralize_go_template;
using kubegap::parse_wrapped_text;
using kubegap::TextSyntax;

TEST(NeutralizeGoTemplate, DropsLinesOfActionsOnlyAndMakesOtherActionsAPlaceholder) {
  const std::string text =
      "metadata:\n"
      "  name: {{.Trial}}\n"
      "args:\n"
      "  - \"--batch-size=64\"\n"
      "  {{- with .HyperParameters}}\n"
      "  {{- range .}}\n"
      "  - \"{{.Name}}={{.Value}}\"\n"
      "  {{- end}} {{- end}}\n";
  EXPECT_EQ(neutralize_go_template(text),
            "metadata:\n"
            "  name: ${template}\n"
            "args:\n"
            "  - \"--batch-size=64\"\n"
            "\n"
            "\n"
            "  - \"${template}=${template}\"\n"
            "\n");
}

TEST(NeutralizeGoTemplate, ControlActionsGoWhereverTheyAreAndOnlyValuesRemain) {
  // Inside a flow list, with a comment after them, across lines, setting a variable.
  EXPECT_EQ(neutralize_go_template("command: [python3, x, {{- range .HyperParameters}} \"--{{.Name}}={{.Value}}\", "
                                   "{{- end}} \"--x\"]"),
            "command: [python3, x,  \"--${template}=${template}\",  \"--x\"]");
  EXPECT_EQ(neutralize_go_template("a: 1\n  {{- range .HyperParameters}}  # each one\nb: 2"), "a: 1\n\nb: 2");
  EXPECT_EQ(neutralize_go_template("image: t {{/* a note\n  *over* lines */}}\nb: 2"), "image: t \n\nb: 2");
  EXPECT_EQ(neutralize_go_template("{{ $n := .Trial }}\nname: {{ $n }}"), "\nname: ${template}");
  EXPECT_EQ(neutralize_go_template("{{- if .GPU}}\ngpu: 1\n{{- else}}\ngpu: 0\n{{- end}}"), "\ngpu: 1\n\ngpu: 0\n");
}

TEST(NeutralizeGoTemplate, AnActionLeftOpenRunsToTheEndAndPlainTextIsUnchanged) {
  EXPECT_EQ(neutralize_go_template("a: {{.X\nb: 1"), "a: ${template}\n");
  EXPECT_EQ(neutralize_go_template("a: b\n  c: \"{ not an action }\""), "a: b\n  c: \"{ not an action }\"");
  EXPECT_EQ(neutralize_go_template(""), "");
}

TEST(ParseWrappedText, ReadsOneObjectAndSaysWhyWhenItCannot) {
  auto ok =
      parse_wrapped_text("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{.Trial}}\n", TextSyntax::kGoTemplate);
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  ASSERT_TRUE(ok.document.IsObject());
  EXPECT_STREQ(ok.document["metadata"]["name"].GetString(), "${template}");
  // The same text is not YAML without neutralizing: `{` opens a flow mapping.
  EXPECT_FALSE(parse_wrapped_text("metadata:\n  name: {{.Trial}}\n", TextSyntax::kYaml).error.empty());
  const auto broken = parse_wrapped_text("a: [1, 2\n", TextSyntax::kYaml);
  EXPECT_NE(broken.error.find("line"), std::string::npos) << broken.error;
  const auto two = parse_wrapped_text("a: 1\n---\nb: 2\n", TextSyntax::kYaml);
  EXPECT_NE(two.error.find("expected one object"), std::string::npos) << two.error;
  EXPECT_FALSE(parse_wrapped_text("- 1\n- 2\n", TextSyntax::kYaml).error.empty());
  // A text past the bound is not parsed at all (a review's text is outside its memory budget).
  std::string big = "a: [";
  while (big.size() < kubegap::kMaxWrappedTextBytes) big += "1,";
  big += "1]\n";
  const auto refused = parse_wrapped_text(big, TextSyntax::kYaml);
  EXPECT_NE(refused.error.find("bytes, over the 65536 read"), std::string::npos) << refused.error;
  // Aliases may not multiply a text: nine levels of ten make a billion nodes from 300 bytes.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int j = 1; j < 10; ++j) bomb += ", " + p;
    bomb += "]\n";
  }
  EXPECT_FALSE(parse_wrapped_text(bomb, TextSyntax::kYaml).error.empty());
  // Nor copy a long string: 1,500 aliases of one 60,000-byte string would be 90 MB.
  std::string copies = "s: &s " + std::string(60000, 'x') + "\nl: [*s";
  for (int i = 1; i < 1500; ++i) copies += ",*s";
  copies += "]\n";
  ASSERT_LT(copies.size(), kubegap::kMaxWrappedTextBytes);
  EXPECT_NE(parse_wrapped_text(copies, TextSyntax::kYaml).error.find("too many nodes"), std::string::npos);
}

const kubegap::Finding* finding_of(const kubegap::CheckedObject& object, const std::string& check) {
  const auto it = std::find_if(object.findings.begin(), object.findings.end(),
                               [&](const kubegap::Finding& f) { return f.check == check; });
  return it == object.findings.end() ? nullptr : &*it;
}

std::string notes_of(const kubegap::CheckedObject& object) {
  std::string out;
  for (const auto& f : object.findings) {
    if (f.check == "input") out += f.reason + "\n";
  }
  return out;
}

constexpr const char* kV1alpha3 = R"(apiVersion: kubeflow.org/v1alpha3
kind: Experiment
metadata: {name: random-example, namespace: kubeflow}
spec:
  trialTemplate:
    goTemplate:
      rawTemplate: |-
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: {{.Trial}}
          namespace: {{.NameSpace}}
        spec:
          template:
            spec:
              containers:
              - name: {{.Trial}}
                image: docker.io/kubeflowkatib/mxnet-mnist
                command:
                - "python3"
                - "/opt/mxnet-mnist/mnist.py"
                - "--num-epochs=10"
                {{- with .HyperParameters}}
                {{- range .}}
                - "{{.Name}}={{.Value}}"
                {{- end}}
                {{- end}}
                resources:
                  limits: {nvidia.com/gpu: 1}
              restartPolicy: Never
)";

TEST(KatibTrialText, AV1alpha3GoTemplateTrialIsJudgedAndReportedOnTheExperiment) {
  const auto report = kubegap::check_text(kV1alpha3, "v1alpha3.yaml", kubegap::default_policy());
  ASSERT_TRUE(report.errors.empty());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr) << notes_of(report.objects[0]);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  EXPECT_EQ(checkpoint->parts, (std::vector<std::string>{"trial"}));

  // Text that cannot be read is said, not passed in silence.
  std::string broken = kV1alpha3;
  broken.replace(broken.find("        kind: Job"), 17, "        kind: [Job");
  const auto unread = kubegap::check_text(broken, "broken.yaml", kubegap::default_policy());
  ASSERT_EQ(unread.objects.size(), 1u);
  EXPECT_EQ(finding_of(unread.objects[0], "checkpoint-volume"), nullptr);
  EXPECT_NE(notes_of(unread.objects[0]).find("trial: not evaluated: its template text cannot be read (line"),
            std::string::npos)
      << notes_of(unread.objects[0]);
}

constexpr const char* kTrialConfigMap = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: trial-templates, namespace: kubeflow}
data:
  train.yaml: |-
    apiVersion: batch/v1
    kind: Job
    spec:
      template:
        spec:
          containers:
            - name: training-container
              image: docker.io/example/train
              command: [torchrun, train.py, "--lr=${trialParameters.learningRate}"]
              resources: {limits: {nvidia.com/gpu: 1}}
          restartPolicy: Never
---
)";

constexpr const char* kConfigMapExperiment = R"(apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: cm-trials, namespace: kubeflow}
spec:
  trialTemplate:
    primaryContainerName: training-container
    configMap: {configMapName: trial-templates, configMapNamespace: kubeflow, templatePath: train.yaml}
)";

TEST(KatibTrialText, ATrialTemplateInAConfigMapIsReadWhenTheConfigMapIsInTheInput) {
  const auto report =
      kubegap::check_text(std::string(kTrialConfigMap) + kConfigMapExperiment, "cm.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr) << notes_of(report.objects[0]);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);

  // Without it, the Experiment says where its trial is, and nothing else is claimed.
  const auto alone = kubegap::check_text(kConfigMapExperiment, "alone.yaml", kubegap::default_policy());
  ASSERT_EQ(alone.objects.size(), 1u);
  EXPECT_EQ(finding_of(alone.objects[0], "checkpoint-volume"), nullptr);
  const std::string notes = notes_of(alone.objects[0]);
  EXPECT_NE(notes.find("trial: not evaluated: its template is entry train.yaml of ConfigMap "
                       "kubeflow/trial-templates, which is not in view"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("where its row looks"), std::string::npos) << "one note says why: " << notes;
}

TEST(WrappedKinds, ACronWhoseKindIsWrittenInsideItsWorkloadIsJudgedAndTold) {
  constexpr const char* kCron = R"(apiVersion: apps.kubedl.io/v1alpha1
kind: Cron
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  template:
    workload:
      apiVersion: training.kubedl.io/v1alpha1
      kind: TFJob
      metadata: {name: mnist}
      spec:
        tfReplicaSpecs:
          Worker:
            template:
              spec:
                containers:
                - name: tensorflow
                  image: kubedl/tf-mnist
                  command: [python, train.py, --model_dir=/tmp/model]
                  resources: {limits: {nvidia.com/gpu: 1}}
)";
  const auto report = kubegap::check_text(kCron, "cron.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr) << notes_of(report.objects[0]);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  EXPECT_NE(notes_of(report.objects[0])
                .find("kind TFJob is written inside `workload`, where KubeDL's controller "
                      "does not read it (it reads spec.template.apiVersion and .kind)"),
            std::string::npos)
      << notes_of(report.objects[0]);
}

// The text of one object is read up to one allowance, whatever wraps it: an AppWrapper of
// many Experiments with large templates parses no more than one would.
TEST(KatibTrialText, TheTextsOfOneObjectShareOneAllowanceAndTheirNotesNameTheirPlace) {
  std::string experiment = kV1alpha3;
  std::string indented;
  for (std::size_t start = 0; start < experiment.size();) {
    const auto end = experiment.find('\n', start);
    indented += "        " + experiment.substr(start, end - start) + "\n";
    start = end + 1;
  }
  // Pad each template to 30,000 bytes with a comment line.
  std::string padded = indented;
  padded.replace(padded.find("{nvidia.com/gpu: 1}"), 19, "{nvidia.com/gpu: \"{{.GPUs}}\"}");
  padded.insert(padded.find("\n                apiVersion: batch/v1") + 1,
                "                # " + std::string(30000, 'x') + "\n");
  std::string wrapper =
      "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: aw}\nspec:\n"
      "  components:\n";
  for (int i = 0; i < 3; ++i) wrapper += "    - template:\n" + padded;
  const auto report = kubegap::check_text(wrapper, "aw.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const std::string notes = notes_of(report.objects[0]);
  EXPECT_NE(notes.find("component 2: trial: not evaluated: its template text"), std::string::npos) << notes;
  EXPECT_NE(notes.find("bytes of text read for one object"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("component 1: trial: not evaluated"), std::string::npos) << notes;
  // A note made inside a wrapped object names where it was made.
  EXPECT_NE(notes.find("component 0: trial: resource nvidia.com/gpu"), std::string::npos) << notes;
}

TEST(KatibTrialText, TextThatDoesNotReadAsItsKindIsNotEvaluatedAndTheRestIsKept) {
  std::string text = kV1alpha3;
  // `args: {{.Args}}` reads as a string where a list belongs.
  text.replace(text.find("                command:"), 24, "                args: {{.Args}}\n                command:");
  const auto report = kubegap::check_text(text, "args.yaml", kubegap::default_policy());
  ASSERT_TRUE(report.errors.empty()) << report.errors.front().text();
  ASSERT_EQ(report.objects.size(), 1u);
  EXPECT_NE(notes_of(report.objects[0]).find("trial: not evaluated: its template text does not read as its kind ("),
            std::string::npos)
      << notes_of(report.objects[0]);
}

TEST(KatibTrialText, AConfigMapReferenceWithoutItsNamespaceIsNotGuessed) {
  std::string experiment = kConfigMapExperiment;
  experiment.replace(experiment.find(" configMapNamespace: kubeflow,"), 30, "");
  const auto report =
      kubegap::check_text(std::string(kTrialConfigMap) + experiment, "cm.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  EXPECT_EQ(finding_of(report.objects[0], "checkpoint-volume"), nullptr);
  EXPECT_NE(notes_of(report.objects[0])
                .find("trial: not evaluated: its template's ConfigMap reference names no configMapNamespace"),
            std::string::npos)
      << notes_of(report.objects[0]);
}

constexpr const char* kMxJobV1alpha1 = R"(apiVersion: kubeflow.org/v1alpha1
kind: MXJob
metadata: {name: mx-old}
spec:
  jobMode: MXTrain
  replicaSpecs:
  - replicas: 2
    mxReplicaType: WORKER
    template:
      spec:
        containers:
        - name: mxnet
          image: mxjob/mxnet:gpu
          command: [python, train_mnist.py, --num-epochs, "10"]
          resources: {limits: {nvidia.com/gpu: 1}}
)";

TEST(ListedKindElsewhere, AnotherVersionOfATrainingKindIsJudgedWhereItsTemplatesAreAndSaysSo) {
  const auto report = kubegap::check_text(kMxJobV1alpha1, "mx.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr) << notes_of(report.objects[0]);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  EXPECT_NE(notes_of(report.objects[0])
                .find("kind MXJob (kubeflow.org): no pod template at spec.mxReplicaSpecs.*.template, where its row "
                      "looks (another version of the kind?): judged at the pod templates found at "
                      "spec.replicaSpecs[mxReplicaType].template (policy judgeUnlistedKinds)"),
            std::string::npos)
      << notes_of(report.objects[0]);
  // Each replica is named by its type, so the row's roles still apply to it.
  EXPECT_EQ(checkpoint->parts, (std::vector<std::string>{"replicaSpecs WORKER"}));

  // With judgeUnlistedKinds off, the report says nothing of it was read.
  const auto off = kubegap::parse_policy("judgeUnlistedKinds: false\n", "p.yaml");
  const auto unread = kubegap::check_text(kMxJobV1alpha1, "mx.yaml", off);
  ASSERT_EQ(unread.objects.size(), 1u);
  EXPECT_EQ(finding_of(unread.objects[0], "checkpoint-volume"), nullptr);
  EXPECT_NE(notes_of(unread.objects[0]).find("where its row looks: nothing in it was evaluated"), std::string::npos)
      << notes_of(unread.objects[0]);
}

TEST(ListedKindElsewhere, AnotherVersionKeepsTheRowsRolesForItsNamedReplicas) {
  // TFJob v1alpha1: the MASTER writes the checkpoints (to a claim); the workers beside it,
  // naming no save path, are judged with it (alone they would warn: they mount nothing),
  // and the PS coordinates.
  constexpr const char* kTfJob = R"(apiVersion: kubeflow.org/v1alpha1
kind: TFJob
metadata: {name: dist-mnist}
spec:
  replicaSpecs:
  - tfReplicaType: MASTER
    template:
      spec:
        containers:
        - name: tensorflow
          image: example/tf-dist-mnist
          command: [python, /app/main.py, --train_steps=2000, --logdir=/ckpt/run1]
          volumeMounts: [{name: ckpt, mountPath: /ckpt}]
        volumes: [{name: ckpt, persistentVolumeClaim: {claimName: tf-runs}}]
  - tfReplicaType: WORKER
    replicas: 2
    template:
      spec:
        containers:
        - {name: tensorflow, image: example/tf-dist-mnist, command: [python, /app/main.py, --train_steps=2000]}
  - tfReplicaType: PS
    template:
      spec:
        containers:
        - {name: tensorflow, image: example/tf-dist-mnist, command: [python, /app/main.py]}
)";
  const auto report = kubegap::check_text(kTfJob, "tf.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  EXPECT_TRUE(checkpoint == nullptr || checkpoint->outcome != kubegap::Outcome::kFinding)
      << checkpoint->message << "\n"
      << notes_of(report.objects[0]);
  // Without the claim, the MASTER's run dies with its pod.
  std::string lost = kTfJob;
  lost.replace(lost.find("persistentVolumeClaim: {claimName: tf-runs}"), 43, "emptyDir: {}");
  const auto warned = kubegap::check_text(lost, "tf.yaml", kubegap::default_policy());
  ASSERT_EQ(warned.objects.size(), 1u);
  const auto* gap = finding_of(warned.objects[0], "checkpoint-volume");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->outcome, kubegap::Outcome::kFinding);
  EXPECT_EQ(gap->parts, (std::vector<std::string>{"replicaSpecs MASTER"}));
}

TEST(ListedKindElsewhere, AKindThatMayHaveNoTemplatesIsNotSearchedButSaysNothingWasEvaluated) {
  // A RayJob on an existing cluster (clusterSelector) keeps only its submitter's template:
  // not one of its parts, and not searched for.
  constexpr const char* kAttached = R"(apiVersion: ray.io/v1
kind: RayJob
metadata: {name: attached}
spec:
  entrypoint: python train.py --epochs 3
  clusterSelector: {ray.io/cluster: shared}
  submitterPodTemplate:
    spec:
      containers:
      - {name: submit, image: rayproject/ray}
      restartPolicy: Never
)";
  const auto report = kubegap::check_text(kAttached, "attached.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  EXPECT_EQ(finding_of(report.objects[0], "checkpoint-volume"), nullptr);
  EXPECT_NE(notes_of(report.objects[0]).find("kind RayJob (ray.io): no pod template at "), std::string::npos)
      << notes_of(report.objects[0]);
  EXPECT_NE(notes_of(report.objects[0]).find("nothing in it was evaluated"), std::string::npos);
}

}  // namespace
}  // namespace kgtest
