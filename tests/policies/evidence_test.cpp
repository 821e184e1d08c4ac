// Evidence from commands and env (policies/evidence.h): each rule of the auto class, the
// diagnostic class and object-storage checkpoints, one row each, with the default policy.
#include "policies/evidence.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "policies/flag_words.h"
#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

struct EvidenceRow {
  std::string name;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::optional<std::string> training;    // substring of the reason, or nullopt: none
  std::optional<std::string> diagnostic;  // likewise
  std::optional<std::string> destination;
  std::string image = "example/image:1";
};

void PrintTo(const EvidenceRow& row, std::ostream* os) { *os << row.name; }

const std::vector<EvidenceRow> kRows = {
    {"TorchrunIsALauncher", {"torchrun", "--nproc-per-node=8", "main.py"}, {}, {}, "launcher torchrun", {}, {}},
    {"DeepspeedInAShellScript",
     {"bash", "-c", "cd /src && deepspeed main.py --config ds.json"},
     {},
     {},
     "launcher deepspeed",
     {},
     {}},
    {"TorchDistributedRunModule",
     {"python", "-m", "torch.distributed.run", "main.py"},
     {},
     {},
     "launcher torch.distributed.run",
     {},
     {}},
    {"EpochsFlagWithEquals", {"python", "main.py"}, {"--epochs=3"}, {}, "flag epochs", {}, {}},
    {"MaxStepsFlagDashedWithValue", {"python", "main.py", "--max-steps", "1000"}, {}, {}, "flag max_steps", {}, {}},
    {"KeyValueStepsArgument", {"python3", "-m", "MaxText.x", "steps=100"}, {}, {}, "flag steps", {}, {}},
    {"TrainingFlagInEnv", {"python", "main.py"}, {}, {{"NUM_TRAIN_EPOCHS", "3"}}, "env NUM_TRAIN_EPOCHS", {}, {}},
    {"TorchtuneRecipe",
     {"tune", "run", "lora_finetune_single_device", "--config", "llama3/8B_lora"},
     {},
     {},
     "launcher tune",
     {},
     {}},
    {"HuggingFaceDoTrain",
     {"python", "run_clm.py", "--do_train", "--output_dir", "/out"},
     {},
     {},
     "flag do_train",
     {},
     {}},
    {"ScriptNamedTrain", {"python", "/app/train_resnet.py"}, {}, {}, "script train_resnet.py", {}, {}},
    {"ScriptNamedFinetune", {"python", "finetune.py"}, {}, {}, "script finetune.py", {}, {}},
    {"CheckpointPathArgumentIsWeakEvidence",
     {"python", "main.py", "--save", "/ckpt/run1"},
     {},
     {},
     "checkpoint argument",
     {},
     {}},
    {"EvaluationReadsCheckpoints", {"python", "eval.py", "--checkpoint", "/ckpt/step-100"}, {}, {}, {}, {}, {}},
    {"ConversionReadsCheckpoints",
     {"python3", "convert_checkpoint.py", "--output_dir", "/ckpt/out"},
     {},
     {},
     {},
     {},
     {}},
    {"PretrainedWordIsNotAScript", {"lm_eval", "--model_args", "pretrained=meta-llama/Llama-3"}, {}, {}, {}, {}, {}},
    {"PlainServerIsNeither", {"python", "-m", "http.server", "8080"}, {}, {}, {}, {}, {}},
    {"NvidiaSmiIsDiagnostic", {"nvidia-smi"}, {}, {}, {}, "diagnostic nvidia-smi", {}},
    {"NcclTestsUnderMpirun",
     {"mpirun", "-np", "16", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8"},
     {},
     {},
     {},
     "diagnostic all_reduce_perf",
     {}},
    {"OsuBenchmark", {"mpirun", "-np", "2", "/opt/osu/mpi/pt2pt/osu_bw"}, {}, {}, {}, "diagnostic osu_bw", {}},
    {"SleepInfinityIsAPlaceholder", {"sleep", "infinity"}, {}, {}, {}, "placeholder sleep", {}},
    {"EchoThenSleepIsAPlaceholder",
     {"sh", "-c", "echo hello $(hostname); sleep 30"},
     {},
     {},
     {},
     "placeholder echo",
     {}},
    {"WhileTrueSleepIsAPlaceholder", {"bash", "-c", "while true; do sleep 3600; done"}, {}, {}, {}, "placeholder", {}},
    {"PythonOneLinerIsASmokeTest",
     {"python3", "-c", "import torch; print(torch.cuda.is_available())"},
     {},
     {},
     {},
     "inline python -c snippet",
     {}},
    // The same written as a here-document: code in the manifest, no program file.
    {"PythonHeredocIsASmokeTest",
     {"bash", "-c", "conda activate t && python - <<'PYEOF'\nimport torch\nprint(torch.randn(2))\nPYEOF"},
     {},
     {},
     {},
     "inline python heredoc snippet",
     {}},
    // A here-document that saves is a program, not a snippet.
    {"PythonHeredocThatSavesIsNoSnippet",
     {"bash", "-c", "torchrun --nproc-per-node 8 - <<'PY'\nimport torch\ntorch.save(m, '/ckpt/m.pt')\nPY"},
     {},
     {},
     "launcher torchrun",
     {},
     {}},
    // A here-document for another program (a config file) is not python's.
    {"ConfigHeredocThenTrainingScript",
     {"bash", "-c", "cat <<EOF > /tmp/c.yaml\nlr: 0.1\nEOF\npython train.py --config /tmp/c.yaml"},
     {},
     {},
     "script train.py",
     {},
     {}},
    {"TrainingWinsOverDiagnostics",
     {"bash", "-c", "nvidia-smi && torchrun main.py"},
     {},
     {},
     "launcher torchrun",
     {},
     {}},
    {"SleepThenTrainIsNotAPlaceholder", {"bash", "-c", "sleep 10; python main.py"}, {}, {}, {}, {}, {}},
    // Trainer's default runtime command: prints a banner, the PET_ env and the packages.
    {"EnvDumpAndPipListIsAPlaceholder",
     {"/bin/bash", "-c", "echo \"Torch Distributed Runtime\"\nenv | grep PET_\npip list"},
     {},
     {},
     {},
     "placeholder echo",
     {}},
    {"PipInstallThenTrainIsNotAPlaceholder",
     {"bash", "-c", "pip install -r requirements.txt && python main.py"},
     {},
     {},
     {},
     {},
     {}},
    {"PauseImageWithoutCommand", {}, {}, {}, {}, "placeholder image pause", {}, "registry.k8s.io/pause:3.10"},
    // The image's name, whatever the registry (a port included) or digest.
    {"PauseImageFromARegistryWithAPort",
     {},
     {},
     {},
     {},
     "placeholder image pause",
     {},
     "mirror.local:5000/k8s/pause@sha256:0123"},
    // An operating system image whose own command is a shell runs nothing without one.
    {"ShellImageWithoutCommand", {}, {}, {}, {}, "placeholder image ubuntu", {}, "ubuntu:22.04"},
    {"ShellImageWithACommandIsJudgedByIt", {"python3", "train.py"}, {}, {}, "script train.py", {}, {}, "ubuntu:22.04"},
    {"CudaImageWithoutCommandIsNotOne", {}, {}, {}, {}, {}, {}, "nvidia/cuda:12.4.1-base-ubuntu22.04"},
    {"NoCommandSaysNothing", {}, {}, {}, {}, {}, {}},
    {"GcsCheckpointFlag",
     {"python", "train.py", "--checkpoint_dir=gs://runs/a"},
     {},
     {},
     "script train.py",
     {},
     "gs://runs/a"},
    {"S3OutputDirFlagWithValue",
     {"torchrun", "main.py", "--output_dir", "s3://b/run"},
     {},
     {},
     "launcher torchrun",
     {},
     "s3://b/run"},
    {"CheckpointEnvOnS3",
     {"python", "-m", "sft.train"},
     {},
     {{"CHECKPOINT_DIR", "s3://ckpt/x"}},
     "script sft.train",
     {},
     "s3://ckpt/x"},
    {"BucketFlagNamesABucket",
     {"python", "train.py", "--bucket", "acme-models"},
     {},
     {},
     "script train.py",
     {},
     "bucket acme-models"},
    {"LocalOutputDirIsNotObjectStorage",
     {"python", "train.py", "--output_dir=/out"},
     {},
     {},
     "script train.py",
     {},
     {}},
    // Google Cloud's --job-dir is where the training application writes its outputs.
    {"JobDirOnObjectStorage",
     {"python", "/opt/model.py", "--lr=0.01", "--job-dir=gs://runs/trial-1"},
     {},
     {},
     "flag lr",
     {},
     "gs://runs/trial-1"},
    // A bucket the run writes to, by any name with "bucket" in it; not one it reads.
    {"AnOutputBucketByAnyName",
     {"python", "train.py", "--epochs=60"},
     {},
     {{"MODEL_BUCKET", "s3://artifacts/models"}},
     "flag epochs",
     {},
     "s3://artifacts/models"},
    // Not a bucket it writes to: a region, a switch, a mount path, a log or a source bucket.
    {"BucketNamedSettingsThatAreNotDestinations",
     {"python", "train.py", "--epochs=60"},
     {},
     {{"S3_BUCKET_REGION", "us-west-2"},
      {"USE_BUCKET", "true"},
      {"GCS_BUCKET_MOUNT", "/mnt/gcs"},
      {"LOGS_BUCKET", "gs://logs"},
      {"SOURCE_BUCKET", "s3://raw"},
      {"MODEL_BUCKET", "plain-name"}},
     "flag epochs",
     {},
     {}},
    {"ADataBucketIsInput",
     {"python", "train.py", "--epochs=60"},
     {},
     {{"DATA_BUCKET", "s3://datasets/plates"}, {"INPUT_BUCKET", "s3://datasets/raw"}},
     "flag epochs",
     {},
     {}},
    // An output, save or checkpoint name with a prefix, holding object storage, is where
    // the run writes (a ConfigMap's TRAIN_OUTPUT_DIR read through envFrom).
    {"APrefixedOutputNameOnObjectStorage",
     {"torchrun", "train.py", "--config", "configs/t4.yaml"},
     {},
     {{"TRAIN_OUTPUT_DIR", "s3://artifacts/run-07"}},
     "launcher torchrun",
     {},
     "s3://artifacts/run-07"},
    {"APrefixedOutdirOnObjectStorage",
     {"amplfi-flow-cli", "fit", "--config", "s3://runs/cbc.yaml"},
     {},
     {{"AMPLFI_OUTDIR", "s3://runs/bbh/train"}, {"AMPLFI_DATADIR", "s3://runs/bbh/data"}},
     "subcommand amplfi-flow-cli fit",
     {},
     "s3://runs/bbh/train"},
    // Whole words decide: an upload bucket is no `load`.
    {"AnUploadBucketIsADestination",
     {"torchrun", "--nproc-per-node=4", "finetune.py"},
     {},
     {{"MODEL_UPLOAD_BUCKET", "gs://runs/models"}},
     "launcher torchrun",
     {},
     "gs://runs/models"},
    // Evaluation, metrics, profiles, TensorBoard and caches are not where checkpoints go.
    {"PrefixedOutputsThatHoldNoCheckpoints",
     {"deepspeed", "sft.py", "--deepspeed", "ds.json"},
     {},
     {{"EVAL_OUTPUT_DIR", "s3://runs/eval"},
      {"METRICS_OUTPUT_DIR", "s3://runs/metrics"},
      {"PROFILE_OUTPUT_DIR", "gs://runs/prof"},
      {"TENSORBOARD_SAVE_DIR", "gs://runs/tb"},
      {"HF_CACHE_OUTPUT_DIR", "gs://runs/cache"}},
     "launcher deepspeed",
     {},
     {}},
    // Not one it reads (a checkpoint to resume, a base model, data), and not a local path.
    {"PrefixedNamesOfWhatTheRunReads",
     {"torchrun", "train.py"},
     {},
     {{"RESUME_CHECKPOINT_DIR", "s3://runs/old"},
      {"PRETRAINED_MODEL_PATH", "s3://models/base"},
      {"DATASET_OUTPUT_PATH", "s3://datasets/x"},
      {"TRAIN_OUTPUT_DIR", "/workspace/out"},
      {"TRAIN_OUTPUT", "s3://runs/x"}},
     "launcher torchrun",
     {},
     {}},
    // A launcher that runs an inference program trains nothing (the Llama reference code's
    // chat example under torchrun); the same launcher of a training script does.
    {"ALauncherOfAnInferenceExampleIsNoEvidence",
     {"sh", "-c", "cd /workspace/llama && torchrun --nproc_per_node 1 web_example_chat_completion.py"},
     {},
     {},
     {},
     {},
     {}},
    {"ALauncherOfAnInferenceScriptIsNoEvidence", {"deepspeed", "--num_gpus", "2", "inference.py"}, {}, {}, {}, {}, {}},
    // Only the scripts it runs decide, not other words of the command.
    {"ALauncherBesideOtherWordsIsEvidence",
     {"bash", "-c",
      "export NCCL_DEBUG=INFO; python download_data.py && torchrun main.py --compile --eval_every 100 --dataset "
      "prompt_completion.jsonl"},
     {},
     {},
     "launcher torchrun",
     {},
     {}},
    {"ALauncherOfAProgramIsEvidence",
     {"torchrun", "--nproc_per_node", "8", "main.py"},
     {},
     {},
     "launcher torchrun",
     {},
     {}},
    {"UnrelatedUrlIsNotACheckpointDestination",
     {"python", "train.py", "--data=gs://datasets/x"},
     {},
     {},
     "script train.py",
     {},
     {}},
};

class EvidenceTable : public ::testing::TestWithParam<EvidenceRow> {};

TEST_P(EvidenceTable, Rule) {
  const EvidenceRow& row = GetParam();
  const Policy& policy = default_policy();
  const CommandFacts facts = command_facts(row.command, row.args);
  const auto training = training_evidence(facts, row.env, policy);
  const auto diagnostic = diagnostic_evidence(facts, row.image, row.env, policy);
  const auto destination = checkpoint_destination(facts, row.env, policy);
  ASSERT_EQ(training.has_value(), row.training.has_value()) << training.value_or("(none)");
  if (row.training) {
    EXPECT_NE(training->find(*row.training), std::string::npos) << *training;
  }
  ASSERT_EQ(diagnostic.has_value(), row.diagnostic.has_value()) << diagnostic.value_or("(none)");
  if (row.diagnostic) {
    EXPECT_NE(diagnostic->find(*row.diagnostic), std::string::npos) << *diagnostic;
  }
  EXPECT_EQ(destination, row.destination);
}

INSTANTIATE_TEST_SUITE_P(Evidence, EvidenceTable, ::testing::ValuesIn(kRows),
                         [](const auto& info) { return info.param.name; });

// `$(NAME)` is a Kubernetes env reference the kubelet expands before any shell runs: one
// word with what it is part of. A command substitution with a space, an unclosed `$(`, or
// one longer than a name is split as before.
TEST(Evidence, AKubeletReferenceInAScriptIsPartOfItsWord) {
  const auto words = [](std::string script) { return command_facts({"sh", "-c", std::move(script)}, {}).words; };
  EXPECT_EQ(words("aws s3 mv m.tgz s3://$(OUTPUT_BUCKET)/run"),
            (std::vector<std::string>{"aws", "s3", "mv", "m.tgz", "s3://$(OUTPUT_BUCKET)/run"}));
  EXPECT_EQ(words("echo $(date +%s)"), (std::vector<std::string>{"echo", "$", "date", "+%s"}));
  EXPECT_EQ(words("x=$(OPEN"), (std::vector<std::string>{"x=$", "OPEN"}));
  EXPECT_EQ(words("a $(" + std::string(300, 'N') + ")").size(), 3u);  // "a", "$", the name
  // Many unclosed references are read in one pass (each looks only a name's length ahead).
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "$(";
  EXPECT_FALSE(words(many).empty());
}

TEST(Evidence, ShellScriptProgramsSkipKeywordsAndAssignments) {
  const CommandFacts facts =
      command_facts({"/bin/sh", "-ec", "export A=1; NCCL_DEBUG=INFO exec python x.py | tee log"}, {});
  EXPECT_EQ(facts.programs, (std::vector<std::string>{"python", "tee"}));
  // A declaration builtin is not a word the rules read: `export` names no exporter.
  EXPECT_EQ(std::count(facts.words.begin(), facts.words.end(), "export"), 0);
  // A declaration has no program at all: its names are not programs.
  EXPECT_EQ(command_facts({"bash", "-c", "export EVAL_STEPS; local merged; declare -r X=1; python3 t.py"}, {}).programs,
            (std::vector<std::string>{"python3"}));
  EXPECT_FALSE(reads_checkpoints(facts, default_policy(), ""));
  EXPECT_TRUE(reads_checkpoints(command_facts({"llamafactory-cli", "export", "merge.yaml"}, {}), default_policy(), ""));
  // uv, poetry and conda wrap a program only with `run`; otherwise they are the program.
  const CommandFacts conda = command_facts(
      {"bash", "-c", "conda activate torch && conda run -n torch python t.py && poetry install && uv run u.py"}, {});
  EXPECT_EQ(conda.programs, (std::vector<std::string>{"conda", "python", "poetry", "u.py"}));
  EXPECT_EQ(conda.subcommands.front(), "activate");
}

TEST(Evidence, NormalizedFlags) {
  EXPECT_EQ(normalized_flag("--num-train-epochs"), "num_train_epochs");
  EXPECT_EQ(normalized_flag("steps=10"), "steps");
  EXPECT_EQ(normalized_flag("-Max_Steps"), "max_steps");
  // camelCase (config files, Java-style flags) splits at each hump; capitals in a row
  // (an env name, an acronym) do not.
  EXPECT_EQ(normalized_flag("numEpochs"), "num_epochs");
  EXPECT_EQ(normalized_flag("--outputDir=/x"), "output_dir");
  EXPECT_EQ(normalized_flag("resnet50Model"), "resnet50_model");
  EXPECT_EQ(normalized_flag("TRAIN_EPOCHS"), "train_epochs");
  EXPECT_EQ(normalized_flag("numGPUs"), "num_gpus");
}

// same_flag reads a word's name in the pass that compares it (leading dashes dropped, an
// `=value` ending it) and rejects on the first byte inline: it must still say exactly
// what comparing normalized_flag's spellings says, for every pair.
TEST(Evidence, SameFlagIsEqualNormalizedSpelling) {
  const std::vector<std::string> words = {
      "",      "-",      "--",          "=",         "--=x",           "-a-=b",      "=--a",         "lr",
      "--lr",  "lr=0.1", "LR",          "-lr=",      "numEpochs",      "num-epochs", "num_epochs=3", "--Num_Epochs",
      "a=b=c", "a",      "--saveDir",   "save_dir",  "save-dir=/ckpt", "saveDIR",    "--save--dir",  "s",
      "x=",    "-=",     "numEpochs=2", "NUMEPOCHS", "num__epochs"};
  for (const auto& a : words) {
    for (const auto& b : words) {
      EXPECT_EQ(same_flag(a, b), normalized_flag(a) == normalized_flag(b)) << "'" << a << "' and '" << b << "'";
    }
  }
}

// wildcard_match_icase tests a literal first and last byte inline before its loop: it
// must still say what matching lower-cased copies says.
TEST(Evidence, WildcardIcaseIsTheMatchOfLowerCasedCopies) {
  const std::vector<std::string> patterns = {"",          "*",          "**",  "a",        "A*",    "*a", "*A*",
                                             "train*.py", "*/Train.py", "t*n", "*_mnist*", "a*b*c", "x"};
  const std::vector<std::string> texts = {
      "",    "a",     "A",  "ab", "BA", "train.py", "TRAIN_x.PY", "/opt/train.py", "tn", "torchrun", "keras_MNIST.py",
      "abc", "aXbYc", "acb"};
  const auto lower = [](std::string s) {
    for (char& c : s) c = ascii_lower(c);
    return s;
  };
  for (const auto& p : patterns) {
    for (const auto& t : texts) {
      EXPECT_EQ(wildcard_match_icase(p, t), wildcard_match(lower(p), lower(t))) << "'" << p << "' on '" << t << "'";
    }
  }
}

// wildcard_match compares the literal ends of a pattern before it searches the middle: it
// must say what the plain recursive definition of '*' says, for every pattern over {a, b,
// *} and every text over {a, b} up to five bytes (overlapping ends such as "a*a" on "a").
TEST(Evidence, WildcardIsTheRecursiveDefinitionOfStar) {
  const std::function<bool(std::string_view, std::string_view)> reference = [&](std::string_view p,
                                                                                std::string_view t) {
    if (p.empty()) return t.empty();
    if (p.front() == '*') return reference(p.substr(1), t) || (!t.empty() && reference(p, t.substr(1)));
    return !t.empty() && p.front() == t.front() && reference(p.substr(1), t.substr(1));
  };
  const auto all = [](std::string_view alphabet, std::size_t longest) {
    std::vector<std::string> out = {""};
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].size() == longest) continue;
      for (const char c : alphabet) out.push_back(out[i] + c);
    }
    return out;
  };
  for (const auto& p : all("ab*", 5)) {
    for (const auto& t : all("ab", 5)) {
      ASSERT_EQ(wildcard_match(p, t), reference(p, t)) << "'" << p << "' on '" << t << "'";
      std::string upper = t;
      for (char& c : upper) c = static_cast<char>(c - 'a' + 'A');
      ASSERT_EQ(wildcard_match_icase(p, upper), reference(p, t)) << "'" << p << "' on '" << upper << "'";
    }
  }
}

TEST(Evidence, CamelCaseFlagsNameTheirSnakeCaseSpelling) {
  const Policy policy = default_policy();
  EXPECT_EQ(training_evidence(command_facts({"python", "main.py", "--numEpochs", "30"}, {}), {}, policy),
            "flag num_epochs");
  EXPECT_EQ(training_evidence(command_facts({"python", "main.py", "--learningRate=3e-4"}, {}), {}, policy),
            "flag learning_rate");
  // Not any word with the same letters: the humps must fall where the underscores are.
  EXPECT_FALSE(training_evidence(command_facts({"python", "main.py", "--numepochsx", "30"}, {}), {}, policy));
  EXPECT_FALSE(training_evidence(command_facts({"python", "main.py", "--nUmEpochs", "30"}, {}), {}, policy));
}

TEST(Evidence, StepAndEpochCountsOfTrainersAreTrainingFlags) {
  const Policy policy = default_policy();
  // verl's Hydra overrides, TensorFlow official models, BERT pre-training.
  EXPECT_EQ(training_evidence(
                command_facts({"python3", "-m", "verl.trainer.main_ppo", "trainer.total_training_steps=400"}, {}), {},
                policy),
            "flag trainer.total_training_steps");
  EXPECT_EQ(training_evidence(command_facts({"python3", "main.py"}, {}), {{"TRAIN_EPOCHS", "12"}}, policy),
            "env TRAIN_EPOCHS");
  EXPECT_EQ(
      training_evidence(command_facts({"python3", "run_pretraining.py", "--num_train_steps=1000"}, {}), {}, policy),
      "flag num_train_steps");
}

// A verb that trains, given to a command-line program or a python script (LightningCLI's
// fit, yolo train, LitGPT's finetune); not another verb, not a shell utility's operand,
// not when the command runs a program named for reading checkpoints.
TEST(Evidence, TrainingVerbsOfCommandLinePrograms) {
  const Policy policy = default_policy();
  const auto why = [&](std::vector<std::string> command) {
    return training_evidence(command_facts(command, {}), {}, policy).value_or("(none)");
  };
  EXPECT_EQ(why({"amplfi-flow-cli", "fit", "--config", "s3://runs/cbc.yaml"}), "subcommand amplfi-flow-cli fit");
  EXPECT_EQ(why({"python", "main.py", "fit", "--config", "c.yaml"}), "subcommand main.py fit");
  EXPECT_EQ(why({"sh", "-c", "cd /app && yolo train data=coco.yaml model=yolov8n.pt"}), "subcommand yolo train");
  EXPECT_EQ(why({"litgpt", "finetune_lora", "microsoft/phi-2"}), "subcommand litgpt finetune_lora");
  EXPECT_EQ(why({"litgpt", "finetune_adapter_v2", "microsoft/phi-2"}), "subcommand litgpt finetune_adapter_v2");
  EXPECT_EQ(why({"amplfi-flow-cli", "test", "--config", "s3://runs/cbc.yaml"}), "(none)");
  EXPECT_EQ(why({"sh", "-c", "mkdir train && ls train"}), "(none)");
  EXPECT_EQ(why({"python", "evaluate.py", "fit"}), "(none)");
  // A reader elsewhere in the command does not cancel the verb (train, then evaluate).
  EXPECT_EQ(why({"sh", "-c", "python main.py fit --config c.yaml && python eval.py"}), "subcommand main.py fit");
  // Not a data split after a script, not a shell's or conda's operand.
  EXPECT_EQ(why({"python", "preprocess.py", "train", "--out", "/data/train"}), "(none)");
  EXPECT_EQ(why({"sh", "-c", "conda activate train && pushd finetune && ls"}), "(none)");
  // A task word between program and verb; not a name after a tool's subcommand, not a
  // data split after a python script's first operand.
  EXPECT_EQ(why({"yolo", "detect", "train", "data=coco8.yaml"}), "subcommand yolo detect train");
  EXPECT_EQ(why({"darknet", "detector", "train", "/etc/darknet/voc.data", "cfg/yolov3.cfg"}),
            "subcommand darknet detector train");
  EXPECT_EQ(why({"sh", "-c", "git checkout train && ls"}), "(none)");
  EXPECT_EQ(why({"python", "split.py", "data", "train"}), "(none)");
  EXPECT_EQ(why({"python3", "tools/split", "train"}), "(none)");  // python's operand is a script
  EXPECT_EQ(why({"yolo", "detect", "predict", "model=best.pt"}), "(none)");
  EXPECT_TRUE(strong_training_evidence("subcommand yolo train"));
}

TEST(Evidence, HintsComeFromPolicy) {
  Policy policy = default_policy();
  const CommandFacts facts = command_facts({"mytrainer", "run"}, {});
  EXPECT_FALSE(training_evidence(facts, {}, policy));
  policy.training_hints.launchers.push_back("mytrainer");
  EXPECT_TRUE(training_evidence(facts, {}, policy));
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// A hostile pod with a huge command line is read only so far: reviews stay cheap.
TEST(Evidence, OnlyTheFirstWordsOfAHugeCommandAreRead) {
  std::vector<std::string> args(100000, "--flag=value");
  args.push_back("--epochs=3");  // past the bound: not seen
  const CommandFacts facts = command_facts({"python", "main.py"}, args);
  EXPECT_EQ(facts.words.size(), 4096u);
  EXPECT_FALSE(training_evidence(facts, {}, default_policy()));
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// Wrappers are looked through: the programs are what really runs.
TEST(Evidence, WrappersAreLookedThrough) {
  const auto programs = [](std::vector<std::string> command, std::vector<std::string> args = {}) {
    return command_facts(command, args).programs;
  };
  using Programs = std::vector<std::string>;
  EXPECT_EQ(programs({"mpirun"}, {"-np", "2", "bash", "-c", "hostname; ls -la /mnt/ckpt; df -h"}),
            (Programs{"hostname", "ls", "df"}));
  EXPECT_EQ(programs({"mpirun", "--allow-run-as-root", "-np", "8", "-x", "NCCL_DEBUG=INFO", "nvidia-smi"}),
            (Programs{"nvidia-smi"}));
  EXPECT_EQ(programs({"mpirun", "--hostfile", "/etc/mpi/hostfile", "python", "train.py"}), (Programs{"python"}));
  EXPECT_EQ(programs({"env", "NCCL_DEBUG=INFO", "python", "-m", "torch.utils.collect_env"}),
            (Programs{"torch.utils.collect_env"}));
  EXPECT_EQ(programs({"srun", "--ntasks=8", "timeout", "30s", "sleep", "infinity"}), (Programs{"sleep"}));
  EXPECT_EQ(programs({"uv", "run", "python", "x.py"}), (Programs{"python"}));
  EXPECT_EQ(programs({"/bin/sh", "-c", "--", "sleep 30s"}), (Programs{"sleep"}));
  EXPECT_EQ(programs({"env"}), (Programs{"env"}));  // a wrapper alone is its own program
  // A here-document's body is data for its program, not commands (`<<-`, quoted or not,
  // ends at its delimiter alone on a line; `<<<` is a here-string and opens none).
  EXPECT_EQ(programs({"bash", "-c", "python - <<'PY'\nmodel = nn.Linear(1, 1)\nlr=0.1\n  PY\necho done"}),
            (Programs{"python", "echo"}));
  EXPECT_EQ(programs({"bash", "-c", "cat <<-EOF > c.yaml\n\tsteps: 5\n\tEOF\ntorchrun train.py"}),
            (Programs{"cat", "torchrun"}));
  EXPECT_EQ(programs({"bash", "-c", "grep x <<< \"$V\"\nsleep 1"}), (Programs{"grep", "sleep"}));
  // A shift or quoted text opens none: what follows is still read.
  for (const char* script : {"N=$((1 << 10))\ntorchrun train.py", "echo \"a << b\"\ntorchrun train.py"}) {
    const Programs seen = programs({"bash", "-c", script});
    EXPECT_NE(std::find(seen.begin(), seen.end(), "torchrun"), seen.end()) << script;
  }
  // `--workdir=...` contains a c but is no `-c`: the script is not the next word.
  EXPECT_EQ(programs({"bash", "launch.sh", "--workdir=gs://b/x", "--lr=0.1"}), (Programs{"bash"}));
}

// clusterDaemons: a program, or a program and its first word, with only placeholders
// around it.
TEST(Evidence, ClusterDaemonsAreProgramsOrProgramsAndTheirFirstWord) {
  const Policy& policy = default_policy();
  const auto daemons = [&](std::vector<std::string> command) {
    return runs_only_daemons(command_facts(command, {}), policy);
  };
  EXPECT_TRUE(daemons({"/usr/sbin/sshd", "-De"}));
  EXPECT_TRUE(daemons({"bash", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -D"}));
  EXPECT_TRUE(daemons({"sh", "-c", "ray start --head --port=6379 --block"}));
  EXPECT_TRUE(daemons({"dask", "worker", "tcp://scheduler:8786"}));
  EXPECT_FALSE(daemons({"ray", "job", "submit", "--", "python", "train.py"}));
  EXPECT_FALSE(daemons({"sh", "-c", "ray start --head; python train.py"}));
  EXPECT_FALSE(daemons({"sleep", "infinity"}));  // a placeholder, not a daemon
  EXPECT_FALSE(daemons({}));
  Policy none = policy;
  none.cluster_daemons.clear();
  EXPECT_FALSE(runs_only_daemons(command_facts({"sshd", "-D"}, {}), none));
}

TEST(Evidence, InferenceServersAreNamedByProgramOrModule) {
  const Policy& policy = default_policy();
  const auto server = [&](std::vector<std::string> command) {
    return serving_evidence(command_facts(command, {}), "", policy);
  };
  EXPECT_EQ(server({"vllm", "serve", "/models/llama", "--port", "8000"}), "inference server vllm serve");
  EXPECT_EQ(server({"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}),
            "inference server vllm.entrypoints.openai.api_server");
  EXPECT_EQ(server({"sh", "-c", "pip install x && python3 -m sglang.launch_server --model-path m"}),
            "inference server sglang.launch_server");
  EXPECT_FALSE(server({"vllm", "bench", "throughput"}));  // vllm's other commands serve nothing
  EXPECT_FALSE(server({"python", "-m", "verl.trainer.main_ppo"}));
  EXPECT_FALSE(server({}));
  // No command: the image's own entrypoint decides, args or not (vLLM's OpenAI image).
  Container sidecar;
  sidecar.image = "docker.io/vllm/vllm-openai:v0.9.2";
  sidecar.args = {"--model=m", "--task=embed"};
  EXPECT_EQ(serving_evidence(command_facts(sidecar.command, sidecar.args), entrypoint_image_of(sidecar), policy),
            "inference server image docker.io/vllm/vllm-openai:v0.9.2");
  sidecar.image = "pytorch/pytorch:2.4.0-cuda12.1";
  EXPECT_FALSE(serving_evidence(command_facts(sidecar.command, sidecar.args), entrypoint_image_of(sidecar), policy));
  sidecar.image = "vllm/vllm-openai:latest";
  sidecar.command = {"python", "train.py"};  // a command of its own: the image says nothing
  EXPECT_FALSE(serving_evidence(command_facts(sidecar.command, sidecar.args), entrypoint_image_of(sidecar), policy));
}

// Web servers are servers too: an nginx demo in a training kind trains nothing.
TEST(Evidence, WebServersServe) {
  const Policy& policy = default_policy();
  EXPECT_EQ(serving_evidence(command_facts({"nginx", "-g", "daemon off;"}, {}), "", policy), "inference server nginx");
  for (const char* image : {"nginx:1.27", "nginx", "docker.io/library/nginx:1.27-alpine",
                            "nginxinc/nginx-unprivileged:1.25", "httpd:2.4"}) {
    EXPECT_TRUE(serving_evidence(command_facts({}, {}), image, policy)) << image;
  }
  EXPECT_FALSE(serving_evidence(command_facts({}, {}), "acme/nginx-log-trainer:1", policy));
}

// A communication smoke test or a test program is a diagnostic; a training script whose
// name says test is still training (strong evidence wins).
TEST(Evidence, SmokeTestsAreDiagnostics) {
  const Policy& policy = default_policy();
  const auto diag = [&](std::vector<std::string> command) {
    return diagnostic_evidence(command_facts(command, {}), "", {}, policy);
  };
  EXPECT_TRUE(diag({"python", "/var/dist_sendrecv.py"}));
  EXPECT_TRUE(diag({"python", "allreduce_check.py", "--size", "1G"}));
  EXPECT_TRUE(diag({"python", "-m", "pytest", "tests/test_nccl.py"}));
  EXPECT_TRUE(diag({"python", "nccl_smoke.py"}));
  EXPECT_TRUE(diag({"mpirun", "-np", "16", "python", "/opt/profile_allreduce.py"}));
  EXPECT_TRUE(diag({"python3", "gradlib/gemm_tuner.py", "--input_file", "shapes.csv"}));
  EXPECT_TRUE(diag({"python", "matmul_autotune.py"}));
  EXPECT_FALSE(diag({"python", "main.py", "--profile"}));  // a flag's word is not the program
  EXPECT_FALSE(diag({"python", "train_test.py", "--epochs", "3"}));
  EXPECT_FALSE(diag({"python", "main.py"}));
  // A file the shell reads to set itself up is no profiler (`*profil*`).
  EXPECT_FALSE(diag({"bash", "-c", "source ~/.bash_profile && python main.py"}));
  EXPECT_FALSE(diag({"bash", "-c", "source /opt/conda/etc/profile.d/conda.sh && python main.py"}));
  EXPECT_FALSE(diag({"bash", "-c", ". /etc/profile.d/modules.sh; python main.py"}));
  EXPECT_TRUE(diag({"bash", "-c", "source env.sh && python profile_step.py"}));
}

// A shell script named for training trains, whatever its extension; "pretrained" names
// weights a script loads, not training.
TEST(Evidence, TrainingScriptsByName) {
  const Policy& policy = default_policy();
  const auto why = [&](std::vector<std::string> command) {
    return training_evidence(command_facts(command, {}), {}, policy).value_or("(none)");
  };
  EXPECT_EQ(why({"bash", "/data/software/train.regr.folds.bash", "/out"}), "script train.regr.folds.bash");
  EXPECT_EQ(why({"bash", "/data/software/train.regr.pretrained.folds.bash"}),
            "script train.regr.pretrained.folds.bash");
  EXPECT_EQ(why({"bash", "/data/software/eval.clf.pretrained.folds.bash", "/out"}), "(none)");
  EXPECT_EQ(why({"python", "load_pretrained.py"}), "(none)");
  EXPECT_EQ(why({"python", "finetune_pretrained.py"}), "script finetune_pretrained.py");
  EXPECT_EQ(why({"python", "pretrain_gpt.py"}), "script pretrain_gpt.py");
}

// A container with no command runs its image: the image's name stands for the program,
// so a checkpoint-looking argument to a conversion or inference image is no evidence of
// training.
TEST(Evidence, AnEntrypointImageNamedForReadingCheckpointsIsNoTraining) {
  const Policy& policy = default_policy();
  const CommandFacts facts = command_facts({}, {"-b=acme-jetstream-ckpts", "-m=google/gemma/2b"});
  const std::string image = "us-docker.pkg.dev/cloud-tpu-images/inference/inference-checkpoint:v0.2.4";
  EXPECT_FALSE(training_evidence(facts, {}, policy, image));
  EXPECT_TRUE(training_evidence(facts, {}, policy, "acme/llm:v1"));
  EXPECT_TRUE(training_evidence(facts, {}, policy));
  EXPECT_TRUE(reads_checkpoints(command_facts({}, {}), policy, "ghcr.io/acme/ckpt-convert@sha256:abc"));
  EXPECT_FALSE(reads_checkpoints(command_facts({}, {}), policy, "ghcr.io/acme/trainer:convert-v2"));  // a tag
}

TEST(Evidence, AnInspectionOfACheckpointPathIsAPlaceholderNotTraining) {
  const CommandFacts facts = command_facts({"mpirun", "-np", "2", "bash", "-c", "ls /mnt/checkpoints; df -h"}, {});
  const auto trains = training_evidence(facts, {}, default_policy());
  ASSERT_TRUE(trains.has_value());
  EXPECT_FALSE(strong_training_evidence(*trains)) << *trains;
  const auto diag = diagnostic_evidence(facts, "", {}, default_policy(), false);
  ASSERT_TRUE(diag.has_value());
  EXPECT_EQ(*diag, "placeholder ls");
}

// off: what switches checkpointing off in `command` (and `env`), by the default policy.
std::optional<std::string> off(const std::vector<std::string>& command, const std::vector<EnvVar>& env = {}) {
  return checkpointing_off(command_facts(command, {}), env, default_policy());
}

TEST(Evidence, CheckpointingSwitchedOff) {
  EXPECT_EQ(off({"python", "train.py", "--save_strategy", "no"}), "--save_strategy no");
  EXPECT_EQ(off({"python", "train.py", "trainer.enable_checkpointing=False"}), "trainer.enable_checkpointing=False");
  EXPECT_EQ(off({"python", "train.py", "+trainer.enable_checkpointing=false"}), "+trainer.enable_checkpointing=false");
  EXPECT_EQ(off({"fairseq-train", "data", "--no-save"}), "--no-save");
  // Case and dashes are folded to the last byte (the quick reject compares that byte).
  EXPECT_EQ(off({"python", "train.py", "--SAVE-Strategy", "no"}), "--SAVE-Strategy no");
  EXPECT_EQ(off({"python", "train.py", "TRAINER.ENABLE_CHECKPOINTING=false"}), "TRAINER.ENABLE_CHECKPOINTING=false");
  EXPECT_EQ(off({"python", "train.py"}, {{"ENABLE_CHECKPOINTING", "false"}}), "ENABLE_CHECKPOINTING=false");
  EXPECT_FALSE(off({"python", "train.py", "--save_strategy", "steps"}));
  EXPECT_FALSE(off({"python", "train.py", "trainer.enable_checkpointing=true"}));
  EXPECT_EQ(off({"python", "/app/train.py", "--n-estimators=200", "--save-model=false"}), "--save-model=false");
  EXPECT_EQ(off({"python", "/app/train.py", "--save_model", "0"}), "--save_model 0");
  EXPECT_FALSE(off({"python", "/app/train.py", "--save-model=true"}));
  // verl saves only with a positive trainer.save_freq.
  EXPECT_EQ(off({"python3", "-m", "verl.trainer.main_ppo", "trainer.save_freq=-1"}), "trainer.save_freq=-1");
  EXPECT_FALSE(off({"python3", "-m", "verl.trainer.main_ppo", "trainer.save_freq=20"}));
  // A save interval of 0 never comes round (Megatron-LM's --save-interval; TorchRec's
  // quickstart documents --checkpoint_interval 0 as off).
  EXPECT_EQ(off({"torchrun", "pretrain_gpt.py", "--save", "/ckpt", "--save-interval", "0"}), "--save-interval 0");
  EXPECT_EQ(off({"torchrun", "train_dlrm.py", "--checkpoint_interval=0"}), "--checkpoint_interval=0");
  EXPECT_FALSE(off({"torchrun", "pretrain_gpt.py", "--save", "/ckpt", "--save-interval", "1000"}));
  EXPECT_FALSE(off({"torchrun", "train_dlrm.py", "--checkpoint_interval=10"}));
}

// NeMo's exp_manager makes its own checkpoint callback and needs the trainer's off: the
// pair says the run saves (checkpointingOn outranks checkpointingOff).
TEST(Evidence, ASwitchThatSavesAnotherWayOutranksCheckpointingOff) {
  const Policy& policy = default_policy();
  EXPECT_EQ(off({"python", "megatron_gpt_pretraining.py", "trainer.enable_checkpointing=False"}),
            "trainer.enable_checkpointing=False");
  EXPECT_FALSE(off({"python", "megatron_gpt_pretraining.py", "trainer.enable_checkpointing=False",
                    "exp_manager.create_checkpoint_callback=True"}));
  EXPECT_TRUE(off({"python", "megatron_gpt_pretraining.py", "exp_manager.create_checkpoint_callback=False"}));
  // From a config file's settings too.
  EXPECT_FALSE(checkpointing_off(CommandFacts{},
                                 {{"enable_checkpointing", "false"}, {"create_checkpoint_callback", "true"}}, policy));
}

// Only words that name what runs say a program reads checkpoints: programs, their verbs
// and script files; not a shell function's name, a path operand or a setting's name.
TEST(Evidence, ReadersAreNamedByWhatRunsNotByOperands) {
  const Policy& policy = default_policy();
  const auto reads = [&](std::vector<std::string> command) {
    return reads_checkpoints(command_facts(command, {}), policy, "");
  };
  EXPECT_TRUE(reads({"python3", "/opt/eval.py", "--ckpt", "/ckpt"}));
  EXPECT_TRUE(reads({"python3", "-m", "lm_eval", "--model", "hf"}));
  EXPECT_TRUE(reads({"vllm", "serve", "/models/x"}));
  EXPECT_TRUE(reads({"python3", "/opt/NeMo/examples/megatron_ckpt_to_nemo.py", "--checkpoint_folder=/c"}));
  EXPECT_TRUE(reads({"python", "convert_llama_weights_to_hf.py", "--input_dir", "/w"}));
  EXPECT_FALSE(reads({"bash", "-c",
                      "function on_script_completion {\n touch /x\n}\ntrap on_script_completion EXIT\n"
                      "python3 pretrain.py"}));
  EXPECT_FALSE(reads({"bash", "-c", "mkdir -p /results/eval && mkdir /results/eval2 && python3 main.py"}));
  EXPECT_FALSE(reads({"python3", "hparams_override.py", "merge_file=/tok/merges.txt", "--do_eval"}));
}

TEST(Evidence, SyntheticBenchmarksOutrankTraining) {
  const Policy& policy = default_policy();
  const auto bench = [&](std::vector<std::string> command) {
    return benchmark_evidence(command_facts(command, {}), {}, policy);
  };
  EXPECT_EQ(bench({"python", "tf_cnn_benchmarks.py", "--num_batches=100"}), "benchmark program tf_cnn_benchmarks.py");
  EXPECT_EQ(bench({"python", "main.py", "--epochs", "1", "--use_fake_data"}), "benchmark flag --use_fake_data");
  EXPECT_EQ(bench({"python", "train.py", "--benchmark", "1"}), "benchmark flag --benchmark 1");
  // Any data flag set to synthetic, dummy, fake or mock data.
  EXPECT_EQ(bench({"torchrun", "train.py", "--data-mode", "synthetic"}), "benchmark flag --data-mode synthetic");
  EXPECT_EQ(bench({"python", "main.py", "dataset_type=synthetic"}), "benchmark flag dataset_type=synthetic");
  EXPECT_EQ(bench({"python", "gpt.py", "model.data.data_impl=mock"}), "benchmark flag model.data.data_impl=mock");
  EXPECT_EQ(bench({"python", "main.py", "--dataSource=Fake"}), "benchmark flag --dataSource=Fake");
  // Every spelling of a listed flag (each entry's name is tested first by the bytes a flag
  // must hold: its underscores may be dashes or camelCase humps, its case any).
  EXPECT_EQ(bench({"python", "main.py", "--useSyntheticData"}), "benchmark flag --useSyntheticData");
  EXPECT_EQ(bench({"python", "main.py", "--USE-SYNTHETIC-DATA"}), "benchmark flag --USE-SYNTHETIC-DATA");
  EXPECT_EQ(bench({"python", "main.py", "--trainDataKind", "Dummy"}), "benchmark flag --trainDataKind Dummy");
  EXPECT_FALSE(bench({"torchrun", "train.py", "--data-dir", "/data/synthetic", "--dataset", "imagenet"}));
  EXPECT_FALSE(bench({"torchrun", "train.py", "--mode", "synthetic"}));
  // Only the exact word: a value that starts with one is real data.
  EXPECT_FALSE(bench({"torchrun", "sft.py", "--data_path", "synthetic_math.jsonl", "--dataset_name", "fake_news"}));
  EXPECT_EQ(bench({"python", "train.py", "dataset_type=synthetic"}), "benchmark flag dataset_type=synthetic");
  EXPECT_FALSE(bench({"python", "train.py", "--benchmark", "0"}));
  EXPECT_FALSE(bench({"python", "train.py", "--dataset", "imagenet"}));
  // NeMo's mock dataset (a Hydra override: its last component) and Megatron-LM's --mock-data.
  EXPECT_EQ(bench({"python", "megatron_gpt_pretraining.py", "model.data.data_impl=mock"}),
            "benchmark flag model.data.data_impl=mock");
  EXPECT_EQ(bench({"torchrun", "pretrain_gpt.py", "--mock-data", "--train-iters", "50"}), "benchmark flag --mock-data");
  EXPECT_FALSE(bench({"python", "megatron_gpt_pretraining.py", "model.data.data_impl=mmap"}));
  // A program called benchmark.py, also under a launcher; MLPerf Storage's runner; a
  // Neuron compile-only trial run, as a flag or as the wrapping program.
  EXPECT_EQ(bench({"bash", "-c", "nvidia-smi\ncd /mnt/app\ntorchrun --nproc_per_node=8 scripts/benchmark.py"}),
            "benchmark program benchmark.py");
  EXPECT_EQ(bench({"bash", "-c", "mlpstorage checkpointing run --model llama3-8b --num-checkpoints-write 20"}),
            "benchmark program mlpstorage");
  EXPECT_EQ(bench({"python3", "ray_train_llama2.py", "--neuron_parallel_compile"}),
            "benchmark flag --neuron_parallel_compile");
  // As a program it is not: compile-then-train scripts run it before the real run.
  EXPECT_FALSE(
      bench({"bash", "-c", "neuron_parallel_compile torchrun run_clm.py; torchrun run_clm.py --max_steps 9000"}));
  EXPECT_FALSE(bench({"torchrun", "--nproc_per_node=8", "train_benchmarked_model.py"}));
  // A bare switch names an undotted flag only: Lightning's trainer.benchmark is cuDNN
  // autotuning of a real run, and no diagnostic word is read out of a flag either.
  const std::vector<std::string> lightning = {"python", "main.py", "fit", "--trainer.benchmark=true",
                                              "--trainer.max_epochs=90"};
  EXPECT_FALSE(bench(lightning));
  EXPECT_FALSE(diagnostic_evidence(command_facts(lightning, {}), "", {}, policy, false));
}

// A program that saves only when told (Kubeflow's mnist.py and --save-model, Megatron-LM
// and --save) keeps nothing without its flag; a storage flag of any kind means it was told
// somewhere (or is a fork that saves).
TEST(Evidence, AProgramThatSavesOnlyWhenToldKeepsNothingUntold) {
  const Policy& policy = default_policy();
  EXPECT_EQ(off({"python3", "/opt/pytorch-mnist/mnist.py", "--epochs=5"}),
            "mnist.py, which saves only with --save_model (not given)");
  EXPECT_EQ(off({"torchrun", "pretrain_gpt.py", "--train-iters", "500000", "--data-path", "/data/x"}),
            "pretrain_gpt.py, which saves only with --save (not given)");
  EXPECT_FALSE(off({"python3", "/opt/pytorch-mnist/mnist.py", "--epochs=5", "--save-model"}));
  EXPECT_FALSE(off({"torchrun", "pretrain_gpt.py", "--save", "/ckpt", "--save-interval", "1000"}));
  EXPECT_FALSE(off({"python3", "mnist.py", "--checkpoint-dir=/checkpoints"}));
  EXPECT_FALSE(off({"python3", "/opt/examples/tensorflow_mnist.py"}));
  // Known by where Kubeflow's images put it: other scripts called mnist.py (Horovod's
  // Keras example, with ModelCheckpoint) save unasked.
  EXPECT_EQ(off({"python3", "/opt/mnist/src/mnist.py", "--epochs=1"}),
            "mnist.py, which saves only with --save_model (not given)");
  EXPECT_FALSE(off({"python", "/app/src/mnist.py", "--epochs", "30"}));
  EXPECT_FALSE(off({"mpirun", "-np", "2", "python", "mnist.py"}));
  Policy none = policy;
  none.saves_only_with.clear();
  EXPECT_FALSE(checkpointing_off(command_facts({"python3", "mnist.py"}, {}), {}, none));
}

// A module run with `python -m` is matched as the file it runs: pkg.train_net is
// train_net.py; MaxText's ahead-of-time compile step is no training.
TEST(Evidence, AModuleIsMatchedAsItsFile) {
  const Policy& policy = default_policy();
  EXPECT_EQ(
      training_evidence(command_facts({"python", "-m", "det.tools.train_net", "--cfg", "a.yaml"}, {}), {}, policy),
      "script train_net.py");
  EXPECT_FALSE(training_evidence(command_facts({"python", "-m", "det.tools.visualize"}, {}), {}, policy));
  EXPECT_FALSE(training_evidence(command_facts({"python", "train", "-m"}, {}), {}, policy));
  EXPECT_EQ(benchmark_evidence(command_facts({"python3", "-m", "MaxText.train_compile", "base.yml"}, {}), {}, policy),
            "benchmark program MaxText.train_compile");
}

// A run limited to a few steps is a smoke test or a throughput measurement; a long one,
// a "no limit" count, a save interval or a unit other than the policy's is not.
TEST(Evidence, ShortRunsAreDiagnostics) {
  const Policy& policy = default_policy();
  const auto bench = [&](std::vector<std::string> command, std::vector<EnvVar> env = {}) {
    return benchmark_evidence(command_facts(command, {}), env, policy);
  };
  EXPECT_EQ(bench({"torchrun", "run_clm.py", "--max_steps", "80"}), "short run --max_steps 80 (at most 100 steps)");
  EXPECT_EQ(bench({"composer", "train.py", "yamls/mpt-7b.yaml", "max_duration=12ba"}),
            "short run max_duration=12ba (at most 100 steps)");
  EXPECT_EQ(bench({"torchrun", "train.py", "--training.steps", "50"}),
            "short run --training.steps 50 (at most 100 steps)");
  EXPECT_EQ(bench({"python", "train.py"}, {{"MAX_STEPS", "20"}}), "short run MAX_STEPS=20 (at most 100 steps)");
  EXPECT_EQ(bench({"python", "-m", "verl.trainer.main_ppo", "trainer.total_training_steps=6"}),
            "short run trainer.total_training_steps=6 (at most 100 steps)");
  EXPECT_FALSE(bench({"torchrun", "run_clm.py", "--max_steps", "7038"}));
  EXPECT_FALSE(bench({"torchrun", "run_clm.py", "--max_steps", "101"}));
  EXPECT_FALSE(bench({"torchrun", "run_clm.py", "--max_steps", "-1"}));
  EXPECT_FALSE(bench({"torchrun", "run_clm.py", "--max_steps=0"}));
  EXPECT_FALSE(bench({"torchrun", "run_clm.py", "--save_steps", "50"}));
  EXPECT_FALSE(bench({"composer", "train.py", "max_duration=4800ba"}));
  EXPECT_FALSE(bench({"composer", "train.py", "max_duration=2ep"}));
  EXPECT_FALSE(bench({"composer", "train.py", "max_duration=12"}));
  // The threshold and the vocabulary are policy.
  Policy wider = policy;
  wider.short_run_max_steps = 10000;
  EXPECT_TRUE(benchmark_evidence(command_facts({"torchrun", "run_clm.py", "--max_steps", "7038"}, {}), {}, wider));
  wider.short_run_flags.clear();
  EXPECT_FALSE(benchmark_evidence(command_facts({"torchrun", "run_clm.py", "--max_steps", "80"}, {}), {}, wider));
}

// A dotted entry names that path or its end, never a bare last component.
TEST(Evidence, DottedSwitchesNameTheirPath) {
  EXPECT_EQ(off({"torchrun", "-m", "torchtitan.train", "--checkpoint.enable=false"}), "--checkpoint.enable=false");
  EXPECT_EQ(off({"torchrun", "train.py", "--job.checkpoint.enable", "false"}), "--job.checkpoint.enable false");
  EXPECT_FALSE(off({"torchrun", "train.py", "--profiling.enable=false"}));
  EXPECT_FALSE(off({"torchrun", "train.py", "--xcheckpoint.enable=false"}));
  EXPECT_FALSE(off({"torchrun", "train.py", "--checkpoint.enable=true"}));
}

// NeMo's exp_manager.exp_dir and Lightning's default_root_dir say where the run saves.
TEST(Evidence, NemoAndLightningSaveDirectories) {
  const Policy& policy = default_policy();
  const auto at = [&](std::vector<std::string> command) {
    auto saved = save_path(command_facts(command, {}), {}, policy);
    return saved ? saved->path : std::string();
  };
  EXPECT_EQ(at({"torchrun", "megatron_gpt_finetuning.py", "exp_manager.exp_dir=/results"}), "/results");
  EXPECT_EQ(at({"torchrun", "pretrain.py", "+exp_manager.exp_dir=/ssd/exp"}), "/ssd/exp");
  EXPECT_EQ(at({"python", "main.py", "fit", "--trainer.default_root_dir=/tmp/run"}), "/tmp/run");
}

// A relative save path starts where the script stands when the program runs: its last
// `cd` before the flag, else the container's workingDir; nowhere known, no save path.
TEST(Evidence, RelativeSavePathsStartWhereTheScriptStands) {
  const Policy& policy = default_policy();
  const auto at = [&](std::vector<std::string> command, std::vector<EnvVar> env = {}, std::string_view dir = {}) {
    auto saved = save_path(command_facts(command, {}), env, policy, dir);
    return saved ? saved->path : std::string();
  };
  EXPECT_EQ(at({"bash", "-c", "cd /app/repo && python train.py --checkpoints_dir ./checkpoints"}),
            "/app/repo/checkpoints");
  EXPECT_EQ(at({"bash", "-c", "cd ${REPO}\npython train.py --output_dir out/run1"}, {{"REPO", "/app/r"}}),
            "/app/r/out/run1");
  EXPECT_EQ(at({"python", "train.py", "--output_dir", "./results"}, {}, "/workspace"), "/workspace/results");
  EXPECT_EQ(at({"sh", "-c", "cd /a/b; cd ..; python t.py --save_dir ../x"}, {}, "/w"), "/x");
  EXPECT_EQ(at({"sh", "-c", "cd sub && python t.py --save_dir ."}, {}, "/w"), "/w/sub");
  // The directory is not known: nothing is said.
  EXPECT_EQ(at({"python", "train.py", "--output_dir", "./results"}), "");
  EXPECT_EQ(at({"sh", "-c", "cd $UNSET && python t.py --save_dir out"}, {}, "/w"), "");
  EXPECT_EQ(at({"sh", "-c", "cd ~ && python t.py --save_dir out"}, {}, "/w"), "");
  EXPECT_EQ(at({"python", "t.py", "--save_dir", "~/out"}, {}, "/w"), "");
  EXPECT_EQ(at({"python", "t.py", "--save_dir", "gs://b/out"}, {}, "/w"), "");
  // Another flag, a model name, a `$` left in a cd: not a directory.
  EXPECT_EQ(at({"python", "t.py", "--save", "--epochs", "3"}, {}, "/w"), "");
  EXPECT_EQ(at({"python", "t.py", "--model_path", "bert-base-uncased"}, {}, "/w"), "");
  EXPECT_EQ(at({"python", "t.py", "--model_path", "./out"}, {}, "/w"), "/w/out");
  EXPECT_EQ(at({"sh", "-c", "cd /app/$X && python t.py --save_dir out"}, {}, "/w"), "");
  // Absolute paths are as they were; a later cd does not move an earlier flag.
  EXPECT_EQ(at({"sh", "-c", "python t.py --save_dir /ckpt; cd /x"}, {}, "/w"), "/ckpt");
}

// A script's own variables (`X=...`, `export X="..."`) expand where a flag reads them,
// over the container's env, in the order the script sets them.
TEST(Evidence, ASavePathReadsTheScriptsOwnVariables) {
  const Policy& policy = default_policy();
  const auto at = [&](std::string script) {
    auto saved = save_path(command_facts({"bash", "-c", std::move(script)}, {}), {{"ROOT", "/scratch"}}, policy);
    return saved ? saved->path : std::string();
  };
  EXPECT_EQ(at("export OUT=$ROOT/run1\ntorchrun pretrain.py --save $OUT"), "/scratch/run1");
  EXPECT_EQ(at("OUT=\"$ROOT/q\"; python t.py --output_dir=$OUT"), "/scratch/q");
  EXPECT_EQ(at("OUT=/a; OUT=/b\npython t.py --save_dir $OUT"), "/b");
  EXPECT_EQ(at("python t.py --save_dir $OUT; OUT=/late"), "");  // set after the flag
  EXPECT_EQ(at("python t.py --save_dir $ROOT/x"), "/scratch/x");
}

// A name no list holds is read by its words (savePlaceNames): a save word, a place word
// last, no word of a place the run reads or keeps something else in. A listed name wins.
TEST(Evidence, SavePlacesAreReadByTheirWords) {
  const Policy& policy = default_policy();
  const auto at = [&](std::vector<std::string> command, std::vector<EnvVar> env = {}) {
    auto saved = save_path(command_facts(command, {}), env, policy);
    return saved ? saved->flag + " " + saved->path : std::string();
  };
  EXPECT_EQ(at({"python", "code/train.py", "--saving_folder", "/home/jovyan/ckpt/econ", "--max_epochs", "25"}),
            "--saving_folder /home/jovyan/ckpt/econ");
  EXPECT_EQ(at({"python", "train.py"}, {{"MODEL_SAVE_PATH", "/tmp/model"}}), "MODEL_SAVE_PATH /tmp/model");
  EXPECT_EQ(at({"torchrun", "train.py", "--checkpoint.folder=/ckpt/run"}), "--checkpoint.folder /ckpt/run");
  EXPECT_EQ(at({"python", "fit.py", "--ckptOutDir", "/out"}), "--ckptOutDir /out");
  EXPECT_EQ(at({"python", "fit.py", "--result_dir", "/runs/a"}), "--result_dir /runs/a");
  // Ray Train's word: RunConfig(storage_path) is where results and checkpoints persist.
  EXPECT_EQ(at({"python", "scripts/net_train.py", "--shared-storage-path", "/home/ray/models"}),
            "--shared-storage-path /home/ray/models");
  EXPECT_EQ(at({"python", "t.py", "--dataset-storage-path", "/x"}), "");  // a place the run reads
  // A listed name decides, wherever it stands.
  EXPECT_EQ(at({"python", "t.py", "--best_ckpt_path", "/tmp/best", "--output_dir", "/mnt/out"}),
            "--output_dir /mnt/out");
  EXPECT_EQ(at({"python", "t.py", "--best_ckpt_path", "/tmp/best"}, {{"OUTPUT_DIR", "/mnt/out"}}),
            "OUTPUT_DIR /mnt/out");
  // Places the run reads, or that keep something other than checkpoints.
  for (const char* name :
       {"--resume_checkpoint_dir", "--data_output_dir", "--teacher_ckpt_path", "--log_save_dir", "--sample_output_dir",
        "--pretrained_ckpt_path", "--cache_dir", "--profiling.save_traces_folder", "--restore_ckpt_path",
        "--vae_ckpt_path", "--hf_checkpoint_dir", "--profiler_output_dir", "--warmstart_checkpoint_dir",
        "--initial_checkpoint_path", "--reward_model_save_path", "--eval_results_dir"}) {
    EXPECT_EQ(at({"python", "t.py", name, "/x"}), "") << name;
  }
  // No save word, or not ending in a place word: not a save place.
  for (const char* name : {"--model_root", "--train_dir", "--output", "--save_steps", "--checkpoint_every",
                           "--output_file", "--dir_out"}) {
    EXPECT_EQ(at({"python", "t.py", name, "/x"}), "") << name;
  }
}

// The same words name a remote save place; a name ending in bucket is one too.
TEST(Evidence, RemoteSavePlacesAreReadByTheirWords) {
  const Policy& policy = default_policy();
  const auto to = [&](std::vector<EnvVar> env) {
    return checkpoint_destination(command_facts({"torchrun", "train.py"}, {}), env, policy).value_or("");
  };
  EXPECT_EQ(to({{"FINAL_SAVE_FOLDER", "gs://runs/final"}}), "gs://runs/final");
  EXPECT_EQ(to({{"ckptExportUri", "s3://runs/x"}}), "s3://runs/x");
  EXPECT_EQ(to({{"RESULTS_S3_URI", "s3://runs/grpo"}}), "s3://runs/grpo");
  EXPECT_EQ(to({{"RUN_OUTPUT", "s3://runs/x"}}), "");
  // A listed name as the last word (`checkpoint`, `save`) is enough with a URL.
  EXPECT_EQ(to({{"MODEL_CHECKPOINT", "gs://runs/m"}}), "gs://runs/m");
  EXPECT_EQ(to({{"TEACHER_CHECKPOINT_DIR", "gs://models/t"}}), "");
  // Only a listed local flag keeps an env var's bucket from deciding: a name read by its
  // words may be a place the run reads (a restore path on a read-only volume).
  EXPECT_EQ(checkpoint_destination(command_facts({"python", "t.py", "--output_dir", "/home/x"}, {}),
                                   {{"MODEL_DIR", "gs://b/m"}}, policy),
            std::nullopt);
  EXPECT_EQ(checkpoint_destination(command_facts({"python", "t.py", "--saving_folder", "/home/x"}, {}),
                                   {{"CHECKPOINT_DIR", "gs://b/m"}}, policy),
            "gs://b/m");
}

TEST(Evidence, ResolvePathJoinsAndNormalizes) {
  EXPECT_EQ(resolve_path("/app", "./ckpt/../out"), "/app/out");
  EXPECT_EQ(resolve_path("/a", "/b/./c/"), "/b/c");
  EXPECT_EQ(resolve_path("/a", "../../.."), "/");
  EXPECT_EQ(resolve_path("/a//b", "c"), "/a/b/c");
  EXPECT_EQ(resolve_path("", "c"), "");
  EXPECT_EQ(resolve_path("rel", "c"), "");
}

// Inline code (python -c, a python here-document) is read for what it visibly does: a
// training call is evidence; one that keeps nothing (no save, write, export, upload, and no
// trainer that saves by default) has nothing to lose.
TEST(Evidence, InlineCodeThatTrainsAndKeepsNothing) {
  const Policy& policy = default_policy();
  const std::string keras =
      "import numpy as np\nimport tensorflow as tf\nX = np.random.rand(100, 10)\nmodel = tf.keras.Sequential()\n"
      "model.compile(optimizer='adam', loss='mse')\nmodel.fit(X, X, epochs=10)\nprint('done')\n";
  const CommandFacts fit = command_facts({"python", "-c"}, {keras});
  EXPECT_TRUE(training_evidence(fit, {}, policy));
  EXPECT_EQ(checkpointing_off(fit, {}, policy), "inline python code, which calls .fit() and saves nothing");
  const CommandFacts saved = command_facts({"python", "-c"}, {keras + "model.save('/out/m.keras')\n"});
  EXPECT_TRUE(training_evidence(saved, {}, policy));
  EXPECT_FALSE(checkpointing_off(saved, {}, policy));
  // A here-document after interpreter switches; YOLO.train saves weights by default.
  const CommandFacts yolo = command_facts(
      {"bash", "-c"},
      {"set -e\npip install -q ultralytics\npython3 -u - <<'PY'\nfrom ultralytics import YOLO\nm = YOLO('yolo11n.pt')\n"
       "m.train(data='d.yaml', epochs=30, project='/tmp/yolo/runs')\nPY\n"});
  EXPECT_EQ(yolo.inline_code, "heredoc");
  EXPECT_EQ(training_evidence(yolo, {}, policy), "inline python that calls .train()");
  EXPECT_FALSE(checkpointing_off(yolo, {}, policy));
  // A here-document that says save is a program, not a snippet, and still read.
  const CommandFacts saving = command_facts(
      {"bash", "-c"},
      {"python3 - <<PY\nfrom ultralytics import YOLO\nYOLO('y.pt').train(epochs=30, save_period=5)\nPY\n"});
  EXPECT_EQ(saving.inline_code, "");
  EXPECT_EQ(training_evidence(saving, {}, policy), "inline python that calls .train()");
  // `conda activate ENV` before the snippet only picks its environment.
  const std::string loop = "import torch\nm = torch.nn.Linear(10, 1)\nm(torch.randn(4, 10)).sum().backward()\nPY\n";
  EXPECT_EQ(checkpointing_off(command_facts({"bash", "-c"}, {"conda activate torch-env && python - <<'PY'\n" + loop}),
                              {}, policy),
            "inline python code, which calls .backward() and saves nothing");
  for (const char* setup : {"conda install -y pytorch", "uv pip install torch", "micromamba activate t"}) {
    EXPECT_TRUE(checkpointing_off(command_facts({"bash", "-c"}, {std::string(setup) + " && python - <<'PY'\n" + loop}),
                                  {}, policy))
        << setup;
  }
  EXPECT_FALSE(checkpointing_off(
      command_facts({"bash", "-c"}, {"conda run -n t torchrun x.py && python - <<'PY'\n" + loop}), {}, policy));
  // Beside another program that trains, a snippet's keeping nothing says nothing of it.
  const CommandFacts beside = command_facts(
      {"bash", "-c"}, {"python -c 'import torch; x=torch.ones(2, requires_grad=True); x.sum().backward()'\n"
                       "torchrun train.py --max_steps 10000"});
  EXPECT_FALSE(checkpointing_off(beside, {}, policy));
  // Keras' BackupAndRestore keeps state.
  EXPECT_FALSE(checkpointing_off(
      command_facts({"python", "-c"}, {keras + "cb = tf.keras.callbacks.BackupAndRestore(backup_dir='/tmp/b')\n"}), {},
      policy));
  // Weak evidence (not a launcher or a script), yet not a snippet either.
  EXPECT_FALSE(diagnostic_evidence(yolo, "", {}, policy, false));
  // A rendezvous smoke test calls no training: still a snippet, no evidence.
  const CommandFacts smoke =
      command_facts({"torchrun", "--nproc_per_node=2", "--no-python", "python3", "-c",
                     "import torch.distributed as d; d.init_process_group('nccl'); print(d.get_rank())"},
                    {});
  EXPECT_FALSE(training_evidence(smoke, {}, policy));
  EXPECT_FALSE(checkpointing_off(smoke, {}, policy));
}

TEST(Evidence, StrongEvidenceNamesWhatTrains) {
  EXPECT_TRUE(strong_training_evidence("launcher torchrun"));
  EXPECT_TRUE(strong_training_evidence("script train.py"));
  EXPECT_TRUE(strong_training_evidence("flag max_steps"));
  EXPECT_FALSE(strong_training_evidence("checkpoint argument /ckpt"));
  EXPECT_FALSE(strong_training_evidence("checkpoint mount /ckpt"));
  EXPECT_FALSE(strong_training_evidence(""));
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// A destination passed through an env var ($(VAR), as the kubelet expands it, or $VAR)
// is read through that var.
TEST(Evidence, ADestinationThroughAnEnvVarIsReadThroughIt) {
  const Policy& policy = default_policy();
  const std::vector<EnvVar> env = {{"OUT", "gs://runs/llama"}, {"EMPTY", ""}};
  const auto where = [&](std::string arg) {
    return checkpoint_destination(command_facts({"python", "train.py", arg}, {}), env, policy);
  };
  EXPECT_EQ(where("--output_dir=$(OUT)/run1"), "gs://runs/llama/run1");
  EXPECT_EQ(where("--output_dir=${OUT}"), "gs://runs/llama");
  EXPECT_EQ(where("--output_dir=$OUT"), "gs://runs/llama");
  EXPECT_FALSE(where("--output_dir=$(MISSING)"));
  EXPECT_FALSE(where("--output_dir=$(EMPTY)"));
  EXPECT_FALSE(where("--output_dir=$(OUT"));
  // A local place on the command line outranks a destination in env (MODEL_DIR=gs://...
  // beside `--output_dir lm-out`); without it, the env var speaks.
  const std::vector<EnvVar> model_dir = {{"MODEL_DIR", "gs://runs/gpt2"}};
  EXPECT_FALSE(checkpoint_destination(command_facts({"bash", "-c", "torchrun run_clm.py --output_dir lm-out"}, {}),
                                      model_dir, policy));
  EXPECT_EQ(
      checkpoint_destination(command_facts({"bash", "-c", "torchrun run_clm.py --do_train"}, {}), model_dir, policy),
      "gs://runs/gpt2");
}

// A destination whose value is set outside the object (valueFrom, an envFrom source the
// input does not hold, a shell or template var defined nowhere) is a place nobody here can
// see: it is reported as such, and where it comes from.
TEST(Evidence, ADestinationSetOutsideTheObjectSaysWhere) {
  const Policy& policy = default_policy();
  const auto where = [&](std::vector<std::string> command, const std::vector<EnvVar>& env) {
    return checkpoint_destination(command_facts(command, {}), env, policy);
  };
  const std::vector<EnvVar> from_config = {{"OUT", "", "ConfigMap rl-config"}};
  EXPECT_EQ(where({"python", "train.py", "--output_dir", "$(OUT)"}, from_config),
            "$(OUT) (set from ConfigMap rl-config)");
  const std::vector<EnvVar> env_from = {{"", "", "Secret run-env"}};
  EXPECT_EQ(where({"python", "train.py", "--save_dir=${SAVE}"}, env_from), "${SAVE} (perhaps set from Secret run-env)");
  EXPECT_EQ(where({"sh", "-c", "python train.py --output_dir $OUT_DIR"}, {}), "$OUT_DIR (not set in this object)");
  // The storage var itself taken from a ConfigMap.
  EXPECT_EQ(where({"python", "train.py"}, {{"CHECKPOINT_DIR", "", "ConfigMap paths"}}),
            "$(CHECKPOINT_DIR) (set from ConfigMap paths)");
  // Not outside: the script sets the var, the kubelet leaves an unknown $(VAR) as written
  // (a relative directory), a literal value, a non-storage flag.
  EXPECT_FALSE(where({"sh", "-c", "OUT_DIR=/tmp/o; python train.py --output_dir $OUT_DIR"}, {}));
  EXPECT_FALSE(where({"python", "train.py", "--output_dir", "$(OUT)"}, {}));
  EXPECT_FALSE(where({"python", "train.py", "--output_dir", "$(OUT)"}, {{"OUT", "/tmp/o"}}));
  EXPECT_FALSE(where({"python", "train.py", "--data_dir", "$(OUT)"}, from_config));
  // A bucket flag names a bucket wherever its name is set.
  EXPECT_EQ(where({"python", "train.py", "--gcs_bucket", "$(B)"}, {{"B", "", "ConfigMap c"}}), "bucket $(B)");
}

}  // namespace
}  // namespace kgtest
