#include "policies/policy.h"

#include <algorithm>

#include "policies/checks.h"

namespace kubegap {

bool Policy::namespace_excluded(const std::string& namespace_name) const {
  return std::find(excluded_namespaces.begin(), excluded_namespaces.end(), namespace_name) != excluded_namespaces.end();
}

bool Policy::check_applies(std::string_view check_id, WorkloadClass workload_class) const {
  if (!check_enabled(check_id)) return false;
  const auto it = checks_by_class.find(workload_class);
  return it != checks_by_class.end() && std::find(it->second.begin(), it->second.end(), check_id) != it->second.end();
}

CheckAction Policy::action(std::string_view check_id) const {
  const auto it = check_actions.find(check_id);
  return it == check_actions.end() ? CheckAction::kWarn : it->second;
}

std::string_view class_name(WorkloadClass workload_class) {
  switch (workload_class) {
    case WorkloadClass::kTraining:
      return "training";
    case WorkloadClass::kServing:
      return "serving";
    case WorkloadClass::kAuto:
      return "auto";
    case WorkloadClass::kDiagnostic:
      return "diagnostic";
  }
  return "auto";
}

std::optional<WorkloadClass> parse_class(std::string_view name) {
  for (const auto c :
       {WorkloadClass::kTraining, WorkloadClass::kServing, WorkloadClass::kAuto, WorkloadClass::kDiagnostic}) {
    if (class_name(c) == name) return c;
  }
  return std::nullopt;
}

const WorkloadKind* Policy::workload_kind(std::string_view group, std::string_view kind) const {
  const auto it = std::find_if(workload_kinds.begin(), workload_kinds.end(),
                               [&](const WorkloadKind& w) { return w.group == group && w.kind == kind; });
  return it == workload_kinds.end() ? nullptr : &*it;
}

namespace {

// words: a list written as one string of words separated by spaces (long word lists).
std::vector<std::string> words(std::string_view spaced) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < spaced.size();) {
    const std::size_t end = std::min(spaced.find(' ', at), spaced.size());
    if (end > at) out.emplace_back(spaced.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// set_default_hints: the vocabularies that read commands (default-policy.yaml cites them).
void set_default_hints(Policy& p) {  // data table
  p.training_hints.launchers = {"torchrun",
                                "deepspeed",
                                "horovodrun",
                                "torch.distributed.run",
                                "torch.distributed.launch",
                                "accelerate",
                                "hyperpodrun",
                                "llamafactory-cli",
                                "composer",
                                "tune"};
  p.training_hints.flags = {"epochs",
                            "num_epochs",
                            "num_train_epochs",
                            "max_epochs",
                            "max_steps",
                            "max_iters",
                            "train_steps",
                            "num_steps",
                            "total_steps",
                            "train_iters",
                            "steps",
                            "learning_rate",
                            "lr",
                            "do_train",
                            "save_steps",
                            "save_every_steps",
                            "checkpoint_every",
                            "checkpoint_period",
                            "checkpoint_freq",
                            "gradient_accumulation_steps",
                            "per_device_train_batch_size",
                            "train_epochs",
                            "total_epochs",
                            "total_training_steps",
                            "num_train_steps"};
  p.training_hints.scripts = {"*train*.py",    "*train*.sh", "*train*.bash",   "*.train",        "*finetune*.py",
                              "*finetune*.sh", "*.finetune", "*fine_tune*.py", "*fine-tune*.py", "*pretrain*.py",
                              "*pretrain*.sh", "*.pretrain", "*sft*.py"};
  p.training_hints.verbs = {
      "fit",     "train", "finetune", "finetune_full", "finetune_lora", "finetune_adapter", "finetune_adapter_v2",
      "pretrain"};
  p.training_hints.non_training = {"*eval*",           "*infer*",       "*convert*",    "*download*",
                                   "*compile*",        "*quantiz*",     "*export*",     "*merge*",
                                   "*serve*",          "*benchmark*",   "*completion*", "*ckpt_to_*",
                                   "*checkpoint_to_*", "*weights_to_*", "*_to_hf*",     "*_to_nemo*"};
  p.diagnostic_hints = {
      "nvidia-smi",    "rocm-smi",    "amd-smi",       "hl-smi",     "xpu-smi",         "neuron-ls",   "neuron-top",
      "clinfo",        "sycl-ls",     "fi_info",       "dcgmi",      "dcgmproftester*", "gpu_burn",    "gpu-burn",
      "vectoradd*",    "devicequery", "bandwidthtest", "*_perf",     "osu_*",           "nvbandwidth", "*benchmark*",
      "*collect_env*", "pi",          "run_check",     "*sendrecv*", "*send_recv*",     "*allreduce*", "*all_reduce*",
      "*smoke*",       "test_*.py",   "*_test.py",     "pytest",     "*profil*",        "*autotun*",   "*gemm_tun*",
      "*kernel_tun*"};
  // Programs that hold a place or only print facts about the machine.
  p.diagnostic_names = words("smoke smoketest sanity toy hello helloworld bringup selftest precheck");
  p.placeholder_commands = {"sleep",  "echo",     "printf", "true",   "pause",  "wait",        "trap",        "tail",
                            "exit",   "hostname", "date",   ":",      "ls",     "df",          "du",          "cat",
                            "env",    "printenv", "nproc",  "free",   "uname",  "whoami",      "id",          "pwd",
                            "lscpu",  "lspci",    "lsblk",  "ulimit", "ibstat", "ibv_devinfo", "ibv_devices", "cd",
                            "export", "set",      "source", "mkdir",  "grep",   "head",        "wc",          "pip"};
  // Images whose own command is a shell, which exits at once with no stdin: a container of
  // one without a command runs nothing (kwok and scheduler tests).
  for (const char* os :
       {"ubuntu", "debian", "busybox", "alpine", "centos", "fedora", "rockylinux", "almalinux", "amazonlinux"}) {
    p.placeholder_commands.push_back(os);
  }
  // Cluster nodes that wait for work: MPI workers (sshd), Ray nodes, Dask's scheduler and workers.
  p.cluster_daemons = {"sshd", "ray start", "dask-scheduler", "dask-worker", "dask scheduler", "dask worker"};
  // Inference servers, each from its project's docs (default-policy.yaml cites them).
  p.serving_programs = {"vllm serve",
                        "vllm.entrypoints.openai.api_server",
                        "vllm.entrypoints.api_server",
                        "sglang.launch_server",
                        "sglang serve",
                        "text-generation-launcher",
                        "tritonserver",
                        "trtllm-serve",
                        "llama-server",
                        "ollama serve",
                        "lmdeploy serve",
                        "nginx",
                        "httpd",
                        "httpd-foreground"};
  p.serving_images = {"*vllm/vllm-openai:*",
                      "*vllm/vllm-openai",
                      "*/text-generation-inference:*",
                      "*/llama.cpp:server*",
                      "nginx",
                      "nginx:*",
                      "*/nginx",
                      "*/nginx:*",
                      "*/nginx-unprivileged*",
                      "httpd",
                      "httpd:*",
                      "*/httpd:*"};
  // Each from the program's own documentation (default-policy.yaml cites them).
  p.checkpointing_off = {"enable_checkpointing=false",
                         "enable_checkpointing=0",
                         "save_strategy=no",
                         "no_save",
                         "create_checkpoint_callback=false",
                         "enable_checkpoint=false",
                         "save_checkpoints=false",
                         "checkpointing=false",
                         "checkpoint.enable=false",
                         "save_model=false",
                         "save_model=0",
                         "save_freq=-1",
                         "save_freq=0",
                         "save_interval=0",
                         "checkpoint_interval=0"};
  p.checkpointing_on = {"create_checkpoint_callback=true"};
  p.benchmark_flags = {"benchmark",
                       "use_synthetic_data",
                       "synthetic_data",
                       "synthetic",
                       "use_fake_data",
                       "fake_data",
                       "dummy_data",
                       "dummy",
                       "use_dummy_data",
                       "data=synthetic*",
                       "dataset=synthetic*",
                       "dataset_type=synthetic",
                       "data_backend=synthetic*",
                       "mode=benchmark*",
                       "dataset=dummy*",
                       "dataset=fake*",
                       "data_impl=mock",
                       "*data*=synthetic",
                       "*data*=dummy",
                       "*data*=fake",
                       "*data*=mock",
                       "mock_data",
                       "neuron_parallel_compile"};
  p.saves_only_with = {"*/pytorch-mnist/mnist.py=save_model",
                       "*/mnist/src/mnist.py=save_model",
                       "*/mnist/main.py=save_model",
                       "pretrain_gpt.py=save",
                       "pretrain_bert.py=save",
                       "pretrain_t5.py=save",
                       "pretrain_mamba.py=save"};
  p.saves_by_default = {"keras_mnist.py=./",
                        "keras_mnist_advanced.py=./",
                        "tensorflow_keras_mnist.py=./",
                        "tensorflow2_keras_mnist.py=./",
                        "tensorflow_keras_mnist_elastic.py=./",
                        "tensorflow2_keras_mnist_elastic.py=./",
                        "tensorflow2_mnist_ray.py=./",
                        "tensorflow_mnist.py=./checkpoints",
                        "tensorflow_mnist_eager.py=./checkpoints",
                        "tensorflow2_mnist.py=./checkpoints",
                        "tensorflow2_mnist_elastic.py=./checkpoints",
                        "tensorflow_mnist_estimator.py=./mnist_convnet_model",
                        "keras_imagenet_resnet50.py=./ checkpoint_format",
                        "pytorch_imagenet_resnet50.py=./ checkpoint_format",
                        "pytorch_imagenet_resnet50_elastic.py=./ checkpoint_format",
                        "*/imagenet/main.py=./",
                        "*/pytorch-mnist/mnist.py=./",
                        "*/mnist/src/mnist.py=./",
                        "*/mnist/main.py=./",
                        "*yolov5/train.py=<script>/runs/train project",
                        "*/MaxText/train.py=./maxtext_output",
                        "MaxText.train=./maxtext_output",
                        "openrlhf.cli.train_sft=./ckpt",
                        "openrlhf.cli.train_ppo_ray=./ckpt"};
  p.saves_nothing = {"mnist_with_summaries.py",
                     "RunTrial.py",
                     "*/darts-cnn-cifar10/run_trial.py",
                     "cifar10_deepspeed.py",
                     "*/examples/pytorch_mnist.py",
                     "*/examples/pytorch/pytorch_mnist.py",
                     "*/examples/pytorch_mnist_elastic.py",
                     "*/examples/elastic/pytorch/pytorch_mnist_elastic.py"};
  p.short_run_flags = {"max_steps",       "max_iters",   "train_iters",     "train_steps",
                       "num_train_steps", "total_steps", "num_iters",       "total_training_steps",
                       "num_batches",     "steps",       "max_duration=#ba"};
  p.benchmark_programs = {"tf_cnn_benchmarks*",
                          "*benchmark.py",
                          "benchmark_*.py",
                          "*benchmarks.py",
                          "*_bench.py",
                          "bench_*.py",
                          "torch.utils.bottleneck",
                          "nsys",
                          "ncu",
                          "nvprof",
                          "mlpstorage",
                          "*train_compile*"};
  p.checkpoint_storage_flags = words(
      "checkpoint checkpoint_dir checkpoint_path checkpoint_uri ckpt_dir ckpt_path save save_dir "
      "save_path output_dir output_path output_uri model_dir base_output_directory storage_path bucket "
      "gcs_bucket s3_bucket aip_checkpoint_dir aip_model_dir workdir exp_dir default_root_dir "
      "model_path checkpoints_dir save_folder work_dir job_dir out_dir outdir backup");
  p.save_place_names.saves = words(
      "save saving saved checkpoint checkpoints ckpt ckpts output outputs out outdir export results storage "
      "result artifact artifacts");
  p.save_place_names.places = words("dir directory folder path root location uri outdir");
  p.save_place_names.reads = words(
      "data dataset input source log logs resume init load pretrained base from eval metrics profile "
      "profiling profiler trace traces tensorboard tb summary summaries wandb dump cache teacher "
      "reference ref reward vae hf restore warmstart warm initial sample samples pred preds prediction "
      "predictions tmp temp");
  p.input_volumes.names = words("data dataset datasets cache caches hf huggingface input inputs corpus corpora");
  p.input_volumes.keeps = words(
      "model models output outputs out checkpoint checkpoints ckpt ckpts result results save saves "
      "saved artifact artifacts log logs run runs experiment experiments exp exps workspace work "
      "workdir home storage scratch job jobs user users team project projects metrics trace traces dump "
      "profile profiles");
  p.input_volumes.writers = words("log logs run runs metrics trace traces dump profile profiles tensorboard tb");
  p.input_volumes.readers = words(
      "data dataset datasets input inputs cache hf huggingface corpus name pretrained tokenizer vocab "
      "base init load file files source");
  p.object_storage_schemes = {"gs://",    "s3://", "s3a://",  "abfss://", "abfs://",
                              "wasbs://", "az://", "hdfs://", "oci://"};
}

}  // namespace

const Policy& default_policy() {
  static const Policy kDefault = [] {
    Policy p;
    for (const auto& check : check_registry()) p.enabled_checks.emplace_back(check.id);
    p.accelerator_resources = {
        "nvidia.com/gpu",   "nvidia.com/mig-*",  "nvidia.com/gpu.shared", "nvidia.com/a10*", "nvidia.com/a30*",
        "nvidia.com/a40*",  "nvidia.com/h100*",  "nvidia.com/h200*",      "nvidia.com/l4*",  "nvidia.com/t4*",
        "nvidia.com/v100*", "nvidia.com/rtx*",   "nvidia.com/A10*",       "nvidia.com/A30*", "nvidia.com/A40*",
        "nvidia.com/H100*", "nvidia.com/H200*",  "nvidia.com/L4*",        "nvidia.com/T4*",  "nvidia.com/V100*",
        "nvidia.com/RTX*",  "amd.com/gpu",       "gpu.intel.com/*",       "habana.ai/gaudi", "aws.amazon.com/neuron*",
        "google.com/tpu",   "huawei.com/Ascend*"};
    // DRA device classes of the GPU and accelerator drivers (NVIDIA k8s-dra-driver-gpu,
    // AMD k8s-gpu-dra-driver, Intel resource drivers, AWS Neuron).
    p.accelerator_device_classes = {"gpu.nvidia.com", "mig.nvidia.com",  "gpu.amd.com",
                                    "gpu.intel.com",  "gaudi.intel.com", "neuron.aws.com"};
    // KAI scheduler's GPU sharing (pkg/common/constants): a fraction or memory of a GPU.
    p.accelerator_annotations = {"gpu-fraction", "gpu-memory"};
    p.framework_labels = {"training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "volcano.sh/job-name",
                          "trainer.kubeflow.org/trainjob-ancestor-step"};
    p.durable_csi_drivers = {"gcsfuse.csi.storage.gke.io", "s3.csi.aws.com", "efs.csi.aws.com", "file.csi.azure.com",
                             "blob.csi.azure.com",         "nfs.csi.k8s.io", "fstab/cifs",      "juliohm/cifs",
                             "ceph.rook.io/rook"};
    p.gpu_fault_taints = {"nvidia.com/gpu-xid-error", "nvidia.com/gpu-nvlink-error", "nvidia.com/gpu-error",
                          "nvidia.com/syslog-xid-error"};
    p.health_toleration_seconds_bound = 300;
    p.max_parts_per_object = 256;
    p.excluded_namespaces = {"kube-system"};
    p.checkpoint_path_hints = {"checkpoint", "ckpt"};
    set_default_hints(p);
    p.workload_kinds = default_workload_kinds();
    p.checks_by_class = {
        {WorkloadClass::kTraining, p.enabled_checks},
        {WorkloadClass::kAuto, p.enabled_checks},
        // Inference servers: only a checkpoint-looking mount is judged.
        {WorkloadClass::kServing, {std::string(kCheckpointVolume)}},
        {WorkloadClass::kDiagnostic, {}},
    };
    return p;
  }();
  return kDefault;
}

// Iterative glob match with backtracking to the last '*': linear in practice, no recursion.
namespace {

// backtrack: the glob match itself, once the literal first and last bytes are known to
// agree (wildcard_match tests them below, wildcard_match_icase inline in policy.h).
template <typename Equal>
bool backtrack(std::string_view pattern, std::string_view text, Equal equal) {
  // The literal runs before the first '*' and after the last one are the text's ends: they
  // are compared first, in the passes that find them, where most pairs differ
  // (`*benchmark.py` and `train.py` after four bytes from the end), and only the middle,
  // '*' at both ends, is searched.
  std::size_t head = 0;
  for (; head < pattern.size() && pattern[head] != '*'; ++head) {
    if (head == text.size() || !equal(pattern[head], text[head])) return false;
  }
  if (head == pattern.size()) return head == text.size();  // no '*': the whole text
  std::size_t tail = 0;                                    // pattern[head] is '*': this stops there at the latest
  for (; pattern[pattern.size() - 1 - tail] != '*'; ++tail) {
    if (tail == text.size() - head || !equal(pattern[pattern.size() - 1 - tail], text[text.size() - 1 - tail])) {
      return false;
    }
  }
  pattern = pattern.substr(head, pattern.size() - head - tail);
  text = text.substr(head, text.size() - head - tail);
  std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && equal(pattern[p], text[t])) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool wildcard_match_loop(std::string_view pattern, std::string_view text) {
  return backtrack(pattern, text, [](char a, char b) { return a == b; });
}

bool wildcard_match_icase_loop(std::string_view pattern, std::string_view text) {
  return backtrack(pattern, text, [](char a, char b) { return ascii_lower(a) == ascii_lower(b); });
}

}  // namespace kubegap
