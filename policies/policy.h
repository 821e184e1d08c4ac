#pragma once
// Policy: every list the checks consult, with the compiled-in defaults of DESIGN.md.
// A policy file (webhook/policy_loader) overrides any of them.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/pattern_list.h"

namespace kubegap {

// WorkloadClass: what a workload's pods do, which decides the checks that apply to them
// (Policy::checks_by_class) and how checkpoint-volume judges them.
//   training    the training-operator kinds and pods they own: every check.
//   serving     long-running controllers (Deployment, StatefulSet, LeaderWorkerSet,
//               RayService, ...), usually inference servers: checkpoint-volume only for
//               mounts whose path looks like checkpoints.
//   auto        Jobs, CronJobs, Pods without a controller owner: decided per pod.
//   diagnostic  a part whose containers only run accelerator diagnostics or placeholders.
// A serving or auto pod labelled as training (kubegap.io/training-job: "true", or a
// framework label) is training.
enum class WorkloadClass { kTraining, kServing, kAuto, kDiagnostic };

std::string_view class_name(WorkloadClass workload_class);
std::optional<WorkloadClass> parse_class(std::string_view name);

// CheckAction: how a finding of a check is reported. kWarn: a warning (kubectl prints
// it) and an audit annotation. kAudit: the audit annotation only.
enum class CheckAction { kWarn, kAudit };

// PodTemplateLocation: where a workload kind keeps one kind of pod template.
//
// `path` follows the template path grammar (webhook/core/template_path.h): dot-separated
// from the object's root; `name[key]` walks every element of the array `name`, labelled
// by the element's string member `key`; `name[]` walks every element, labelled by its
// index; `*` walks every member of an object, labelled by the member's name. An empty
// path is the object itself (a Pod). `part` names the template in warnings, with `{}`
// replaced by the label ("replica {}" -> "replica Worker").
struct PodTemplateLocation {
  std::string path;
  std::string part;
  // Labels the controller adds to the pods of this part (besides the kind's own).
  std::vector<std::pair<std::string, std::string>> pod_labels;
  // For `wraps` only: the wrapped object's parts are judged on the evidence of their
  // commands even without an accelerator, where their own kind needs one (a Katib trial:
  // hyperparameter searches often train on CPU, and a trial usually trains).
  bool without_accelerator = false;
  // For `wraps` only: how the object is kept there. "" is the object itself; "yaml" and
  // "goTemplate" are text holding it (Katib v1alpha3's goTemplate.rawTemplate: YAML with
  // Go template actions). With `config_map`, the path holds a reference to that text in a
  // ConfigMap, shaped as Katib's are ({configMapName, configMapNamespace, templatePath}).
  std::string text = {};
  bool config_map = false;

  bool operator==(const PodTemplateLocation&) const = default;
};

// PartRole: a part that coordinates its job rather than doing the work (an MPIJob's
// Launcher runs mpirun; the Workers train). A coordinator gets no checkpoint-volume
// finding of its own; its command is evidence for the whole job (what the job runs,
// where it saves). `writer_when` is a path to a boolean member that makes it a writer
// too (MPIJob spec.runLauncherAsWorker). Or the other way round, `checkpoint_writer`:
// the part that writes the job's checkpoints (a TFJob's Chief: TensorFlow saves on the
// chief); where the object has one, the parts beside it that name no save path of their
// own and mount nothing checkpoint-like are judged with it.
struct PartRole {
  std::string part_label;  // the template's label ("Launcher"), case-insensitive
  std::string writer_when = {};
  bool checkpoint_writer = false;  // role: writer (else role: coordinator)
  // role: helper: a part that prepares the job (Trainer's dataset and model initializers
  // download into the volume the trainer reads). It writes no checkpoints, like a
  // coordinator, but its command is no evidence for the job.
  bool helper = false;

  bool operator==(const PartRole&) const = default;
};

// RestartRow: how a kind's controller restarts a job after a pod fails, for
// restart-on-failure. Where the knobs are is data (paths in the template path grammar
// from the object's root, the API's defaults); how a controller combines them is code,
// one `model` per controller family (policies/restart_on_failure.cpp). Each row's figures
// are cited in docs/restart-on-failure-research.md.
struct RestartRow {
  // The controller family; empty: the kind has no restart budget to judge (serving
  // controllers restart forever, a bare Pod is not restarted by anyone).
  //   job       a batch/v1 Job: backoffLimit, podFailurePolicy (also the Job an MPIJob's
  //             launcher runs as, and a RayJob's retries: a budget with no rules)
  //   jobset    a JobSet: failurePolicy.maxRestarts and its rules over child Jobs
  //   replicas  Kubeflow training-operator: each replica's restartPolicy, runPolicy.backoffLimit
  //   volcano   Volcano: lifecycle policies (event -> action) and maxRetry
  std::string model;
  std::string budget;                          // path to the restart budget
  std::optional<std::int64_t> budget_default;  // unset: unlimited when the field is unset
  std::string per_index_budget = {};           // job: backoffLimitPerIndex (Indexed Jobs)
  std::string rules = {};                      // path to the rules that can spare disruptions
  std::string replica_restart_default = {};    // replicas: a replica's restartPolicy when unset
  std::vector<std::string> restarting = {};    // replicas: restartPolicies the controller restarts

  bool operator==(const RestartRow&) const = default;
};

// TrainingHints: what in a command or env shows that a pod trains (policies/evidence.h).
// Wildcards as in acceleratorResources; flags are compared normalized (no leading
// dashes, '-' as '_', lower case).
struct TrainingHints {
  PatternList launchers;     // words: torchrun, deepspeed, ...
  PatternList flags;         // flag or env names: epochs, max_steps, ...
  PatternList scripts;       // words: *train*.py, *finetune*, ...
  PatternList verbs;         // subcommands that train: `fit` of LightningCLI, ...
  PatternList non_training;  // words that make a checkpoint path weak: *eval*, ...

  bool operator==(const TrainingHints&) const = default;
};

// SavePlaceNames: how a flag or env name that checkpoint_storage_flags does not list is
// read as the place a run saves to, by its words (split at `_`, `-`, `.` and camelCase
// humps): a word of `saves`, the last word one of `places`, and no word of `reads`
// (`--saving_folder`, `MODEL_SAVE_PATH`; not `RESUME_CHECKPOINT_DIR`). With an
// object-storage URL as the value, a last word ending in `bucket` counts too.
struct SavePlaceNames {
  PatternList saves;   // save, checkpoint, output, ...
  PatternList places;  // dir, folder, path, ...
  PatternList reads;   // words of a place read or kept for other things: resume, data, log, ...

  bool operator==(const SavePlaceNames&) const = default;
};

// InputVolumes: how a durable volume is known to hold only what a job reads, so that it
// is not where checkpoints go (policies/input_volumes.h): a word of its name or mount
// directory is one of `names` and none is one of `keeps`, and every path the pod gives
// into it is the value of a name with a word of `readers` (and none of `writers` or of
// save_place_names.saves).
struct InputVolumes {
  PatternList names;    // data, dataset, cache, ...
  PatternList keeps;    // model, output, workspace, home, ...
  PatternList readers;  // words of a flag or env name that reads its path: data, cache, name, ...
  PatternList writers;  // words that outrank them: the name writes there (log, metrics, run, ...)

  bool operator==(const InputVolumes&) const = default;
};

// WorkloadKind: an object kind whose pod templates are evaluated (a row of the table).
struct WorkloadKind {
  std::string group;  // API group, "" for core
  std::string kind;
  WorkloadClass workload_class = WorkloadClass::kAuto;
  std::vector<std::string> operations = {"CREATE", "UPDATE"};
  std::vector<PodTemplateLocation> templates;
  // Paths (template path grammar) to PersistentVolumeClaim templates whose claims the
  // controller gives every pod of this kind as a volume named after the template's
  // metadata.name, replacing a pod-template volume of that name (StatefulSet
  // volumeClaimTemplates, LeaderWorkerSet's, JobSet volumeClaimPolicies).
  std::vector<std::string> claim_templates = {};
  // Paths to job-level volume lists shaped like Volcano's VolumeSpec ({mountPath,
  // volumeClaimName | volumeClaim}): the controller adds each claim as a volume AND mounts
  // it at mountPath in every container of every pod.
  std::vector<std::string> job_volumes = {};
  // Labels the controller adds to every pod it creates, so a PodDisruptionBudget that
  // selects them is found. Values may use {name} (the object's name), {} (the part's
  // label) and {lower} (the part's label in lower case); a label whose value needs a
  // name the object does not have yet (generateName) is left out.
  std::vector<std::pair<std::string, std::string>> pod_labels = {};
  // Checks that say nothing useful for this kind (e.g. the DaemonSet controller
  // overwrites not-ready/unreachable tolerations, so users cannot act on them).
  std::vector<std::string> skip_checks = {};
  // Paths to strings that are the job's own command (RayJob spec.entrypoint).
  std::vector<std::string> entrypoints = {};
  std::vector<PartRole> roles = {};
  // Paths to whole objects of other kinds that this kind wraps (a Katib Experiment's
  // trial template, an AppWrapper's components). Each is evaluated by the row of its own
  // kind, and its findings are reported on the wrapper, its parts named "<part>: <its
  // part>" (`part` as in templates: "component {}").
  std::vector<PodTemplateLocation> wraps = {};
  // A serving kind whose part shows strong training evidence (a launcher, a training
  // script or flag; not a mere checkpoint-looking path) judges that part as training.
  bool evidence_promotes = false;
  // How the object becomes pod templates when its own fields are not enough.
  // "trainerRuntime": a Kubeflow Trainer TrainJob, judged as the JobSet its runtime and
  // its own fields make (webhook/core/trainjob_resolver.h).
  std::string resolve = {};
  // How the kind's controller restarts a failed job (restart-on-failure).
  RestartRow restart = {};

  bool operator==(const WorkloadKind&) const = default;
};

struct Policy {
  // Check ids that run. A disabled check produces nothing, not even an annotation.
  std::vector<std::string> enabled_checks;
  // Extended resource names that make a pod an accelerator pod; `*` matches any run of
  // characters ("nvidia.com/mig-*").
  PatternList accelerator_resources;
  // DRA device class names (`*` as above) whose claims make a pod an accelerator pod.
  PatternList accelerator_device_classes;
  // Pod annotation keys that request a share of a GPU (fractional-GPU schedulers).
  PatternList accelerator_annotations;
  // A pod carrying any of these label keys belongs to a training framework.
  PatternList framework_labels;
  // Inline CSI drivers whose volumes outlive the pod.
  PatternList durable_csi_drivers;
  // Taint keys that GPU health agents put on nodes with a failed GPU.
  PatternList gpu_fault_taints;
  // A not-ready/unreachable NoExecute toleration must be strictly below this many
  // seconds. 300 is the API server's DefaultTolerationSeconds, which every pod without
  // its own toleration gets, so the default flags exactly the pods nobody tuned.
  std::int64_t health_toleration_seconds_bound = 300;
  // At most this many pod templates (parts) of one object are evaluated; the rest are
  // counted in a note. Bounds the work one request can ask for (a PyTorchJob may name
  // thousands of replica types); real workloads have a handful.
  std::int64_t max_parts_per_object = 256;
  // restart-on-failure: a restart budget below this many restarts is small: one node
  // drain or preemption after another uses it up unless disruptions are spared.
  std::int64_t min_restart_budget = 3;
  // A run limited to at most this many steps by one of short_run_flags is a smoke test or
  // a throughput measurement: a few minutes, nothing worth keeping (a diagnostic).
  std::int64_t short_run_max_steps = 100;
  // Objects in these namespaces are not evaluated.
  PatternList excluded_namespaces;
  // Substrings of a mount path that suggest it holds checkpoints.
  PatternList checkpoint_path_hints;
  // Evidence of training in commands and env (auto class, diagnostics).
  TrainingHints training_hints;
  // Words of accelerator diagnostics and benchmarks (nvidia-smi, all_reduce_perf, ...).
  PatternList diagnostic_hints;
  // Programs that hold a placeholder and do nothing (sleep, echo, pause, ...).
  PatternList placeholder_commands;
  // Words of an object's name that say it is a smoke test or a check (`smoke`, `toy`,
  // `bringup`): its parts are diagnostic, unless a word of the name holds "train".
  PatternList diagnostic_names;
  // Programs that start a node of a cluster and wait for work ("sshd", "ray start": a
  // program and its first word): a part that only runs these has no say of its own, and
  // an object whose every part only runs them has no workload (clusterDaemons).
  PatternList cluster_daemons;
  // Inference servers ("vllm serve", "sglang.launch_server"; matched like
  // cluster_daemons): a part that starts one and shows no strong training evidence serves,
  // in any kind (an offline batch-inference JobSet with a vLLM sidecar).
  PatternList serving_programs;
  // Images whose own entrypoint starts an inference server ("vllm/vllm-openai:*"): a
  // container of one that gives no command serves (servingImages).
  PatternList serving_images;
  // Flags or env values that switch checkpointing off ("enable_checkpointing=false", or a
  // bare flag "no_save"): a run that saves nothing on purpose has nothing to lose.
  PatternList checkpointing_off;
  // Flags or settings that say the program saves anyway, outranking a checkpointing_off
  // match ("create_checkpoint_callback=true": NeMo's exp_manager adds its own checkpoint
  // callback and needs the trainer's enable_checkpointing off for it).
  PatternList checkpointing_on;
  // Programs that save only when a flag tells them to ("mnist.py=save_model": Kubeflow's
  // MNIST example saves its model only with --save-model): run without it, they keep
  // nothing, like checkpointing_off.
  PatternList saves_only_with;
  // Where programs save when nothing tells them ("PROGRAM=PLACE [FLAG...]": Horovod's
  // keras_mnist.py writes ./checkpoint-{epoch}.h5 in its working directory): the place a
  // run saves to when its command names none (save_places.h, save_path).
  PatternList saves_by_default;
  // Programs with no code that saves (Katib's ENAS trial RunTrial.py): run without a
  // checkpointStorageFlags flag, they keep nothing, like checkpoint_off.
  PatternList saves_nothing;
  // Flags of synthetic-data throughput benchmarks ("use_synthetic_data", or
  // "data=synthetic*"): such a run is a diagnostic, whatever else it says.
  PatternList benchmark_flags;
  // Flags that set a run's length in steps ("max_steps", "max_duration=#ba": `#` is the
  // count): one at most short_run_max_steps makes the run a diagnostic.
  PatternList short_run_flags;
  // Benchmark programs (words, wildcards as above): a diagnostic even with training flags.
  PatternList benchmark_programs;
  // Flag and env names whose object-storage value is where checkpoints go.
  PatternList checkpoint_storage_flags;
  // Other flag and env names read as where checkpoints go, by their words.
  SavePlaceNames save_place_names;
  // Durable volumes that hold only what the job reads, by their names and uses.
  InputVolumes input_volumes;
  // URL schemes of object storage (gs://, s3://, ...).
  PatternList object_storage_schemes;
  // The kinds whose pods or pod templates are evaluated. Pod is one of them.
  std::vector<WorkloadKind> workload_kinds;
  // `check` judges an object of a kind with no row like a Job, at the pod templates found
  // under its spec (webhook/core/template_discovery.h), unless the kind was dropped from
  // the table (enabled: false): that is recorded in dropped_kinds as {group, kind}.
  bool judge_unlisted_kinds = true;
  // A CPU pod of class auto with strong training evidence is training (classify_pod).
  bool judge_cpu_training = true;
  std::vector<std::pair<std::string, std::string>> dropped_kinds;
  // The checks that apply to each class (a check must also be enabled).
  std::map<WorkloadClass, std::vector<std::string>> checks_by_class;
  // How each check reports a finding; a check not listed warns.
  std::map<std::string, CheckAction, std::less<>> check_actions;

  bool check_enabled(std::string_view check_id) const {
    return std::find(enabled_checks.begin(), enabled_checks.end(), check_id) != enabled_checks.end();
  }
  // check_applies: enabled, and listed for this class.
  bool check_applies(std::string_view check_id, WorkloadClass workload_class) const;
  CheckAction action(std::string_view check_id) const;
  bool namespace_excluded(const std::string& namespace_name) const;
  // workload_kind: the row for this group and kind, or nullptr.
  const WorkloadKind* workload_kind(std::string_view group, std::string_view kind) const;
  // discovers: whether an object of this kind with no row is judged by its pod templates.
  bool discovers(const std::string& group, const std::string& kind) const {
    return judge_unlisted_kinds && std::find(dropped_kinds.begin(), dropped_kinds.end(),
                                             std::pair<std::string, std::string>{group, kind}) == dropped_kinds.end();
  }
};

// default_workload_kinds: Pod and the workload kinds people apply for training.
std::vector<WorkloadKind> default_workload_kinds();

// default_policy: the compiled-in defaults (policies/default-policy.yaml documents them).
const Policy& default_policy();

// wildcard_match_loop: wildcard_match past its first- and last-byte test.
bool wildcard_match_loop(std::string_view pattern, std::string_view text);

// wildcard_match: `pattern` with `*` matching any (possibly empty) run of characters. A
// literal first or last pattern byte must be the text's: that test, inline, ends most
// pairs without a call (every resource name of a review against every accelerator entry).
inline bool wildcard_match(std::string_view pattern, std::string_view text) {
  if (!pattern.empty()) {
    if (pattern.front() != '*' && (text.empty() || pattern.front() != text.front())) return false;
    if (pattern.back() != '*' && (text.empty() || pattern.back() != text.back())) return false;
  }
  return wildcard_match_loop(pattern, text);
}

// wildcard_match_icase_loop: wildcard_match_icase past its first- and last-byte test
// (it does not test them again).
bool wildcard_match_icase_loop(std::string_view pattern, std::string_view text);

// wildcard_match_icase: the same, ASCII letters compared without case (no copies: it runs
// for every word of every command line against every pattern of a list). A literal first
// or last pattern byte must be the text's: that test, inline, ends most (pattern, word)
// pairs without a call.
inline bool wildcard_match_icase(std::string_view pattern, std::string_view text) {
  if (!pattern.empty()) {
    if (pattern.front() != '*' && (text.empty() || ascii_lower(pattern.front()) != ascii_lower(text.front()))) {
      return false;
    }
    if (pattern.back() != '*' && (text.empty() || ascii_lower(pattern.back()) != ascii_lower(text.back()))) {
      return false;
    }
  }
  return wildcard_match_icase_loop(pattern, text);
}

}  // namespace kubegap
