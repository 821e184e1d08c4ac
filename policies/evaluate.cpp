#include "policies/evaluate.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include "policies/checks.h"
#include "policies/classifier.h"
#include "policies/config_settings.h"
#include "policies/evidence.h"
#include "policies/flag_words.h"
#include "policies/mounted_files.h"

namespace kubegap {
namespace {

// exempted_checks: the check ids listed in kubegap.io/exempt ("a,b, c").
bool exempts(const StringMap& annotations, std::string_view check_id) {
  const auto it = annotations.find(kExemptAnnotation);
  if (it == annotations.end()) return false;
  std::string_view list = it->second;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == check_id) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string exempt_reason(const PodSpecView& pod, const WorkloadView& object) {
  for (const StringMap* annotations : {&pod.annotations, &object.annotations}) {
    const auto it = annotations->find(kExemptReasonAnnotation);
    if (it != annotations->end() && !it->second.empty()) return it->second;
  }
  return "no reason given (" + std::string(kExemptReasonAnnotation) + " not set)";
}

// PartResult: one check's conclusion for one training pod spec.
struct PartResult {
  const PodSpecView* pod;
  Gap gap;
};

// kMaxWarningsPerCheck: parts that fail a check in different ways get their own
// warnings, up to this many; the rest are summarised in the last one. All warnings of a
// request share the API server's 4096-rune budget with every other webhook.
constexpr std::size_t kMaxWarningsPerCheck = 2;

// finding_of: a check's gap as a finding (its text moved, not copied).
Finding finding_of(const CheckDefinition& check, Gap& gap) {
  return Finding{check.id, gap.outcome, std::move(gap.message), std::move(gap.reason), check.cases,
                 {},       false,       std::move(gap.remedy)};
}

// group: one Finding per distinct (outcome, message) among the parts, in part order, so
// the same gap in several parts is one finding that lists them. Found by hash, not by a
// scan of the findings so far: messages carry user text (mount paths), so a workload with
// thousands of parts can have thousands of distinct ones.
void group(const CheckDefinition& check, std::vector<PartResult>& results, std::vector<Finding>& out) {
  if (results.size() == 1) {  // most reviews: one part, nothing to group or fold
    out.push_back(finding_of(check, results.front().gap));
    if (!results.front().pod->part.empty()) out.back().parts.push_back(results.front().pod->part);
    return;
  }
  const std::size_t first = out.size();
  std::unordered_map<std::string, std::size_t> index;  // outcome + message -> finding
  for (auto& result : results) {
    std::string key = static_cast<char>('0' + static_cast<int>(result.gap.outcome)) + result.gap.message;
    auto [it, added] = index.try_emplace(std::move(key), out.size());
    if (added) out.push_back(finding_of(check, result.gap));
    if (!result.pod->part.empty()) out[it->second].parts.push_back(result.pod->part);
  }
  // Past the cap, fold the remaining gaps into one summary finding.
  std::vector<Finding> gaps;
  std::vector<Finding> others;
  for (auto it = out.begin() + static_cast<std::ptrdiff_t>(first); it != out.end(); ++it) {
    (it->outcome == Outcome::kFinding ? gaps : others).push_back(std::move(*it));
  }
  out.resize(first);
  if (gaps.size() > kMaxWarningsPerCheck) {
    Finding summary{check.id, Outcome::kFinding,        std::string(check.summary), "", check.cases, {},
                    false,    std::string(check.remedy)};
    for (auto it = gaps.begin() + kMaxWarningsPerCheck - 1; it != gaps.end(); ++it) {
      summary.parts.insert(summary.parts.end(), it->parts.begin(), it->parts.end());
      summary.reason += (summary.reason.empty() ? "" : "; ") + it->reason;
    }
    gaps.resize(kMaxWarningsPerCheck - 1);
    gaps.push_back(std::move(summary));
  }
  for (auto& f : gaps) out.push_back(std::move(f));
  for (auto& f : others) out.push_back(std::move(f));
}

// link_restart_to_checkpoint: a restart resumes only from a checkpoint that survived;
// when checkpoint-volume found that none does, the restart fix says so.
void link_restart_to_checkpoint(std::vector<Finding>& findings) {
  const auto lost = [](const Finding& f) { return f.check == kCheckpointVolume && f.outcome == Outcome::kFinding; };
  if (std::none_of(findings.begin(), findings.end(), lost)) return;
  for (auto& f : findings) {
    if (f.check == kRestartOnFailure && f.outcome == Outcome::kFinding && !f.remedy.empty()) {
      f.remedy += " (see the checkpoint-volume finding)";
    }
  }
}

// pod_row: the row that judges a part: the wrapped object's own row for a part of a
// wrapped object (a Katib trial's PyTorchJob), else the object's.
const WorkloadKind* pod_row(const PodSpecView& pod, const WorkloadKind* row, const Policy& policy) {
  if (pod.wrapped_kind.empty()) return row;
  const WorkloadKind* own = policy.workload_kind(pod.wrapped_group, pod.wrapped_kind);
  return own != nullptr ? own : row;
}

bool skipped_for(const WorkloadKind* row, std::string_view id) {
  return row != nullptr && std::find(row->skip_checks.begin(), row->skip_checks.end(), id) != row->skip_checks.end();
}

// trainjob_trace: for the JobSet and pods the Kubeflow Trainer controller makes from a
// TrainJob, the TrainJob they came from, so a reviewer of the audit log can trace their
// annotations to what a person applied (the TrainJob is judged itself). The JobSet is
// owned by the TrainJob and named after it; its pods carry the JobSet's name label and
// Trainer's own labels.
std::string trainjob_trace(const WorkloadView& object) {
  if (object.owner.kind == "TrainJob" && object.owner.api_group == "trainer.kubeflow.org") {
    return "made by Kubeflow Trainer for TrainJob " + object.namespace_name + "/" + object.owner.name;
  }
  if (object.kind != "Pod" || object.pods.empty()) return {};
  const StringMap& labels = object.pods.front().labels;
  const auto jobset = labels.find("jobset.sigs.k8s.io/jobset-name");
  const bool trainer = std::any_of(labels.begin(), labels.end(),
                                   [](const auto& label) { return label.first.starts_with("trainer.kubeflow.org/"); });
  if (jobset == labels.end() || !trainer) return {};
  return "made by Kubeflow Trainer for TrainJob " + object.namespace_name + "/" + jobset->second;
}

// kMaxEnvJsonSettings: how many settings a container's JSON env values add (bounded work on
// a hostile pod; real ones hold a few dozen).
constexpr std::size_t kMaxEnvJsonSettings = 128;

// EvidenceFacts: what one set of commands shows.
struct EvidenceFacts {
  std::string training, diagnostic, destination;
  std::string checkpointing_off;     // the flag that switches saving off
  std::string save_flag, save_path;  // where a checkpoint/output flag says it saves
  bool speaks = false;               // training or diagnostic evidence of its own
  bool daemons_only = false;         // every container only starts a cluster node (clusterDaemons)
  bool runs_command = false;         // a container runs a command of its own (not only daemons)
  std::string serving;               // an inference server it starts (servingPrograms)
  std::string reader;                // every command only runs programs that read checkpoints
  // job_evidence only: the voice is a sibling part's launcher (a kind with no row), not a
  // coordinator's or an entrypoint's; it speaks only for parts that run their image's
  // entrypoint or only daemons.
  bool launcher_voice = false;
  bool submits = false;  // a command hands its program to a cluster elsewhere (submits_remotely)
};

// submits_remotely: the command runs `ray job submit ... -- CMD` (KubeRay's submitter Job,
// or a Job that submits to a standing RayCluster): CMD runs on that cluster, not in
// this pod, so its evidence says nothing about this pod's own disk.
bool submits_remotely(const CommandFacts& facts) {
  for (std::size_t i = 0; i + 2 < facts.words.size(); ++i) {
    if (basename_view(facts.words[i]) == "ray" && facts.words[i + 1] == "job" && facts.words[i + 2] == "submit") {
      return true;
    }
  }
  return false;
}

void add_command(EvidenceFacts& out, const CommandFacts& facts, const std::vector<EnvVar>& env,
                 const std::string& image, std::string_view entrypoint_image, std::string_view working_dir,
                 const Policy& policy, bool& all_diagnostic) {
  if (out.destination.empty()) {
    if (auto where = checkpoint_destination(facts, env, policy)) out.destination = *where;
  }
  if (out.checkpointing_off.empty()) {
    if (auto off = checkpointing_off(facts, env, policy)) out.checkpointing_off = *off;
  }
  if (out.save_path.empty()) {
    if (auto saved = save_path(facts, env, policy, working_dir)) {
      out.save_flag = std::move(saved->flag);
      out.save_path = std::move(saved->path);
    }
  }
  // A synthetic-data benchmark runs training steps on purpose and keeps nothing: it is a
  // diagnostic even though it trains.
  if (auto bench = benchmark_evidence(facts, env, policy)) {
    if (out.diagnostic.empty()) out.diagnostic = *bench;
    return;
  }
  const auto trains = training_evidence(facts, env, policy, entrypoint_image);
  if (trains && out.training.empty()) out.training = *trains;
  // Only strong evidence outranks a diagnostic: `ls /mnt/checkpoints` inspects a
  // checkpoint path, it does not train.
  const auto diag = diagnostic_evidence(facts, image, env, policy, trains && strong_training_evidence(*trains));
  if (!diag) {
    all_diagnostic = false;
  } else if (out.diagnostic.empty()) {
    out.diagnostic = *diag;
  }
}

// add_settings: what the container's config files say, after its command and env have
// spoken: where it saves, whether saving is off, and, when nothing else said it trains, a
// training setting (weak evidence: it judges a Job, it does not make a Deployment training).
// A name the command line or env sets is theirs (programs that read both let the command
// override the file); a `${VAR}` in a file's value reads the container's env.
void add_settings(EvidenceFacts& out, const CommandFacts& facts, const std::vector<EnvVar>& env,
                  std::vector<EnvVar> settings, std::string_view working_dir, std::string_view entrypoint_image,
                  const Policy& policy) {
  // A name's last dotted component (`training.output_dir` and `--output-dir` name the same).
  const auto last = [](std::string_view name) {
    name = flag_name(name);
    const auto dot = name.rfind('.');
    return dot == std::string_view::npos ? name : name.substr(dot + 1);
  };
  std::erase_if(settings, [&](const EnvVar& s) {
    const std::string_view name = last(s.name);
    // In a file, a model path is the model it loads (`model_path: /models/base`).
    if (same_flag(name, "model_path") || same_flag(name, "model_name_or_path")) return true;
    return std::any_of(facts.words.begin(), facts.words.end(),
                       [&](const std::string& w) { return w.starts_with('-') && same_flag(last(w), name); }) ||
           std::any_of(env.begin(), env.end(), [&](const EnvVar& e) { return same_flag(last(e.name), name); });
  });
  if (settings.empty()) return;
  const std::size_t own = settings.size();
  settings.insert(settings.end(), env.begin(), env.end());
  const CommandFacts none;
  // A setting named under an env var of the container came from that var's JSON value.
  const auto in_env_json = [&](std::string_view name) {
    return std::any_of(env.begin(), env.end(), [&](const EnvVar& e) {
      return name.size() > e.name.size() && name.starts_with(e.name) && name[e.name.size()] == '.';
    });
  };
  // Where a setting was read: a config file, a Python script's constants, or an env var's
  // JSON (named under it).
  const auto origin = [&](std::string_view name) -> std::string {
    if (in_env_json(name)) return " (JSON in env)";
    // The first setting of that name is the one the rules read.
    const auto files_end = settings.begin() + static_cast<std::ptrdiff_t>(own);
    const auto first = std::find_if(settings.begin(), files_end, [&](const EnvVar& s) { return s.name == name; });
    return first != files_end && first->script ? " (script)" : " (config file)";
  };
  if (out.checkpointing_off.empty()) {
    // A setting that switches saving off reads `name=value`.
    if (auto off = checkpointing_off(none, settings, policy)) {
      out.checkpointing_off = *off + origin(std::string_view(*off).substr(0, off->find('=')));
    }
  }
  if (out.destination.empty() && out.save_path.empty()) {
    if (auto where = checkpoint_destination(none, settings, policy)) {
      out.destination = *where;
    } else if (auto saved = save_path(none, settings, policy, working_dir)) {
      out.save_flag = saved->flag + origin(saved->flag);
      out.save_path = std::move(saved->path);
    }
  }
  // Not for a program that reads checkpoints (`eval.py --config train.yaml`), a
  // diagnostic, a server, or a file that sets a short or synthetic run.
  if (!out.training.empty() || !out.diagnostic.empty() || !out.serving.empty() ||
      reads_checkpoints(facts, policy, entrypoint_image)) {
    return;
  }
  settings.resize(own);
  if (benchmark_evidence(none, settings, policy)) return;
  // Settings stand where env would: a training flag's name among them says "env NAME".
  if (auto why = training_evidence(none, settings, policy); why && why->starts_with("env ")) {
    const std::string name = why->substr(4);
    const std::string from = origin(name);
    out.training = from == " (config file)" ? "config file setting " + name : "setting " + name + from;
  }
}

// pod_evidence: a pod spec's main containers. Diagnostic only when every main container
// is; a container that only starts a cluster node (sshd in an MPI worker, `ray start`) or
// runs the image's own entrypoint has no say either way.
EvidenceFacts pod_evidence(const PodSpecView& pod, const std::string& ns, const ClusterSnapshot* known,
                           const Policy& policy, ConfigReadBudget& budget) {
  EvidenceFacts out;
  bool all_diagnostic = true;
  bool any_voice = false;
  // Whether every command so far only reads checkpoints; once one trains (the common
  // case) it is settled and no more names are matched.
  bool any_command = false, all_read = true;
  out.daemons_only = !pod.containers.empty();
  for (const auto& c : pod.containers) {
    CommandFacts facts = command_facts(c.command, c.args);
    MountedFiles files = mounted_files(facts, c, pod, ns, known, budget);
    if (!files.script.empty()) append_facts(facts, command_facts({"sh", "-c", std::string(files.script)}, {}));
    if (out.serving.empty()) out.serving = serving_evidence(facts, entrypoint_image_of(c), policy).value_or("");
    const bool daemon = runs_only_daemons(facts, policy);
    out.daemons_only = out.daemons_only && daemon;
    out.submits = out.submits || submits_remotely(facts);
    std::vector<EnvVar> merged;
    const std::vector<EnvVar>& env = effective_env(c, ns, known, merged);
    // A program's arguments passed as one JSON env value read like a config file's.
    append_env_json_settings(env, files.settings.size() + kMaxEnvJsonSettings, files.settings);
    if (!facts.has_command || daemon) {
      // No command of its own: only its env (and a placeholder image) can speak.
      if (auto where = checkpoint_destination(facts, env, policy); where && out.destination.empty())
        out.destination = *where;
      if (auto why = training_evidence(facts, env, policy, entrypoint_image_of(c)); why && out.training.empty()) {
        out.training = *why;
      }
      if (auto diag = diagnostic_evidence(facts, c.image, env, policy)) {
        any_voice = true;
        if (out.diagnostic.empty()) out.diagnostic = *diag;
      }
      add_settings(out, facts, env, std::move(files.settings), c.working_dir, entrypoint_image_of(c), policy);
      continue;
    }
    any_voice = true;
    out.runs_command = true;
    any_command = true;
    add_command(out, facts, env, c.image, entrypoint_image_of(c), c.working_dir, policy, all_diagnostic);
    all_read = all_read && out.training.empty() && reads_checkpoints(facts, policy, entrypoint_image_of(c));
    add_settings(out, facts, env, std::move(files.settings), c.working_dir, entrypoint_image_of(c), policy);
  }
  // A native sidecar (an init container that keeps running) can be the server.
  for (const auto& c : pod.init_containers) {
    if (!out.serving.empty()) break;
    out.serving = serving_evidence(command_facts(c.command, c.args), entrypoint_image_of(c), policy).value_or("");
  }
  if (any_command && all_read && out.training.empty() && out.serving.empty()) {
    out.reader = "its commands only run programs named for reading checkpoints (nonTraining hints)";
  }
  if (!any_voice || !all_diagnostic || strong_training_evidence(out.training)) out.diagnostic.clear();
  if (!out.diagnostic.empty()) out.training.clear();
  out.speaks = !out.training.empty() || !out.diagnostic.empty();
  return out;
}

// mount_evidence: weak evidence, used last (after what the job's coordinator says): a
// writable checkpoint-looking mount of a container that does not run a program that
// reads checkpoints (nonTraining hints).
std::string mount_evidence(const PodSpecView& pod, const Policy& policy) {
  for (const auto& c : pod.containers) {
    if (reads_checkpoints(command_facts(c.command, c.args), policy, entrypoint_image_of(c))) continue;
    for (const auto& m : c.volume_mounts) {
      if (!m.read_only && looks_like_checkpoint_path(m.mount_path, policy)) return "checkpoint mount " + m.mount_path;
    }
  }
  return {};
}

// job_evidence: the coordinators' commands and the object's entrypoints: what the
// whole job runs, for parts that do not say themselves (MPI workers running sshd). A kind
// with no row names no coordinators: there the first of the evaluated `parts` that runs a
// training launcher (horovodrun, mpirun ... torchrun) speaks for the parts that run only
// their image's entrypoint or sshd (et-operator's launcher and workers: launcher_voice).
EvidenceFacts job_evidence(const WorkloadView& object, std::span<const PodSpecView> parts, const ClusterSnapshot* known,
                           const Policy& policy, ConfigReadBudget& budget) {
  EvidenceFacts out;
  const bool launchers_speak = object.unlisted_kind && std::none_of(object.pods.begin(), object.pods.end(),
                                                                    [](const PodSpecView& p) { return p.coordinator; });
  for (const auto& pod : launchers_speak ? parts : std::span<const PodSpecView>(object.pods)) {
    if (!pod.coordinator && !launchers_speak) continue;
    const EvidenceFacts e = pod_evidence(pod, object.namespace_name, known, policy, budget);
    if (!pod.coordinator && !e.training.starts_with("launcher ")) continue;
    out.launcher_voice = launchers_speak && object.entrypoints.empty();
    if (out.training.empty()) out.training = e.training;
    if (out.diagnostic.empty()) out.diagnostic = e.diagnostic;
    if (out.destination.empty()) out.destination = e.destination;
    if (out.checkpointing_off.empty()) out.checkpointing_off = e.checkpointing_off;
    if (out.save_path.empty()) {
      out.save_flag = e.save_flag;
      out.save_path = e.save_path;
    }
    if (launchers_speak) break;  // the first launcher speaks
  }
  for (const auto& entrypoint : object.entrypoints) {
    bool all_diagnostic = true;
    add_command(out, command_facts({"sh", "-c", entrypoint}, {}), {}, "", {}, {}, policy, all_diagnostic);
    if (!all_diagnostic) out.diagnostic.clear();
  }
  if (!out.training.empty()) out.diagnostic.clear();
  out.speaks = !out.training.empty() || !out.diagnostic.empty();
  return out;
}

}  // namespace

std::string describe_classes(const std::vector<PartVerdict>& parts) {
  std::string out;
  std::size_t evaluated = 0;
  for (const auto& p : parts) evaluated += p.evaluated ? 1 : 0;
  for (const auto& p : parts) {
    if (!p.evaluated) continue;
    if (!out.empty()) out += "; ";
    if (evaluated > 1 || !p.part.empty()) out += p.part + ": ";
    out += std::string(class_name(p.workload_class)) + " (" + p.why + (p.coordinator ? "; coordinator" : "") + ")";
  }
  return out;
}

Evaluation evaluate_object_view(const WorkloadView& object, const ClusterSnapshot* cluster, const Policy& policy,
                                std::string_view cluster_unavailable, const ClusterSnapshot* claims) {
  if (claims == nullptr) claims = cluster;
  Evaluation out;
  std::vector<Finding>& findings = out.findings;
  if (policy.namespace_excluded(object.namespace_name)) return out;

  // A Pod made by a controller in the table is judged like that controller's row.
  const WorkloadKind* row = judging_row(object, policy);
  // The coordinators' files are read for the whole job and again as parts: each reading
  // has a budget of its own, so the job's reading does not starve the parts'.
  ConfigReadBudget job_budget;
  const auto limit = static_cast<std::size_t>(std::max<std::int64_t>(1, policy.max_parts_per_object));
  const auto parts = std::span(object.pods).first(std::min(limit, object.pods.size()));
  const EvidenceFacts job = job_evidence(object, parts, claims, policy, job_budget);
  ConfigReadBudget config_budget;  // the mounted files the parts may still read
  struct JudgedPod {
    const PodSpecView* pod;
    bool accelerator;
    WorkloadClass workload_class;
    std::string destination;
    std::string checkpointing_off;
    std::string save_flag, save_path;
    bool non_writer;  // another part names where the job saves, this one names nothing
  };
  std::vector<JudgedPod> judged;
  // Bounded work per request: the first max_parts_per_object parts are evaluated, the rest
  // counted in a note (annotation `parts`).
  // Notes are rare: no copy or allocation on a review that has none.
  const std::string trace = trainjob_trace(object);
  if (!object.notes.empty() || !trace.empty()) {
    std::string joined;
    for (const auto& n : object.notes) joined += (joined.empty() ? "" : "; ") + n;
    if (!trace.empty()) joined += (joined.empty() ? "" : "; ") + trace;
    findings.push_back(Finding{kInputNote, Outcome::kNote, "", std::move(joined), {}, {}, false, ""});
  }
  if (object.pods.size() > limit) {
    findings.push_back(Finding{kPartsNote,
                               Outcome::kNote,
                               "",
                               "evaluated the first " + std::to_string(limit) + " of " +
                                   std::to_string(object.pods.size()) + " parts (policy maxPartsPerObject)",
                               {},
                               {},
                               false,
                               ""});
  }
  std::vector<EvidenceFacts> evidence;
  evidence.reserve(parts.size());
  // A cluster with no workload of its own: every part only starts cluster nodes, and
  // nothing (an entrypoint) says what they will run.
  bool idle_cluster = !parts.empty() && object.entrypoints.empty();
  for (const auto& pod : parts) {
    evidence.push_back(pod_evidence(pod, object.namespace_name, claims, policy, config_budget));
    idle_cluster = idle_cluster && evidence.back().daemons_only;
  }
  // The parts whose own command says where they save are the job's writers; a part that
  // runs a command of its own naming no save path, and mounts nothing checkpoint-like,
  // writes no checkpoints beside them (an XGBoost worker beside the master that saves the
  // model; rabit's workers hold the same model and rank 0 writes it).
  // So does a part beside the part whose role is to write them (a TFJob's Chief), when it
  // names no save path either.
  const auto saver =
      std::find_if(evidence.begin(), evidence.end(), [](const EvidenceFacts& e) { return !e.save_path.empty(); });
  const auto writer =
      std::find_if(parts.begin(), parts.end(), [](const PodSpecView& p) { return p.checkpoint_writer; });
  // Why part i writes no checkpoints beside the job's writers; empty when it may.
  const auto writes_nothing = [&](std::size_t i) -> std::string {
    if (!evidence[i].save_path.empty() || !mount_evidence(parts[i], policy).empty()) return {};
    if (saver != evidence.end() && evidence[i].runs_command) {
      return "names no save path while " + parts[saver - evidence.begin()].part + " does";
    }
    // Only beside a writer of the same object (an AppWrapper holds several).
    if (writer != parts.end() && !parts[i].checkpoint_writer && parts[i].wrapped_group == writer->wrapped_group &&
        parts[i].wrapped_kind == writer->wrapped_kind) {
      return "names no save path beside " + writer->part + ", which writes the checkpoints";
    }
    return {};
  };
  // Whether another part of the same object requests an accelerator (classify_pod: a CPU
  // part beside it is not judged on its own evidence). Asked twice per part rather than
  // kept, so a review costs no allocation; a wrapper (an AppWrapper holding a GPU
  // Deployment and a CPU Job) keeps a flag per part, since each wrapped object counts alone.
  const bool wrapper =
      std::any_of(parts.begin(), parts.end(), [](const PodSpecView& p) { return !p.wrapped_kind.empty(); });
  std::vector<bool> accelerated;
  if (wrapper) {
    accelerated.reserve(parts.size());
    for (const auto& p : parts) accelerated.push_back(requests_accelerator(p, policy, object.namespace_name, claims));
  }
  const auto accelerator_parts = wrapper ? 0 : std::count_if(parts.begin(), parts.end(), [&](const PodSpecView& p) {
    return requests_accelerator(p, policy, object.namespace_name, claims);
  });
  const auto accelerator_elsewhere = [&](std::size_t i, bool accelerator) {
    if (!wrapper) return accelerator_parts > (accelerator ? 1 : 0);
    for (std::size_t j = 0; j < parts.size(); ++j) {
      if (j != i && accelerated[j] && parts[j].wrapped_group == parts[i].wrapped_group &&
          parts[j].wrapped_kind == parts[i].wrapped_kind) {
        return true;
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PodSpecView& pod = parts[i];
    const bool accelerator = requests_accelerator(pod, policy, object.namespace_name, claims);
    const std::string non_writer_why = writes_nothing(i);
    const bool non_writer = !non_writer_why.empty();
    EvidenceFacts& own = evidence[i];
    // A part that says nothing itself runs what its job's coordinator or entrypoint runs; a
    // sibling's launcher speaks only for parts that run their entrypoint or only daemons.
    if (!own.speaks && (!job.launcher_voice || !own.runs_command || own.daemons_only)) {
      own.training = job.training;
      own.diagnostic = job.diagnostic;
    }
    if (own.training.empty() && own.diagnostic.empty()) own.training = mount_evidence(pod, policy);
    if (own.destination.empty()) own.destination = job.destination;
    if (own.checkpointing_off.empty()) own.checkpointing_off = job.checkpointing_off;
    if (own.save_path.empty()) {
      own.save_flag = job.save_flag;
      own.save_path = job.save_path;
    }
    const PodClass pod_class = classify_pod(pod, object, pod_row(pod, row, policy), accelerator, policy,
                                            {own.training, own.diagnostic, idle_cluster, own.serving, own.reader,
                                             accelerator_elsewhere(i, accelerator), own.submits});
    std::string why = pod_class.why;
    if (non_writer) why += "; " + non_writer_why;
    if (pod.helper) why += "; helper: prepares the job";
    out.parts.push_back({pod.part, pod_class.evaluated, pod_class.workload_class, pod.coordinator, std::move(why)});
    if (pod_class.evaluated) {
      judged.push_back({&pod, accelerator, pod_class.workload_class, own.destination, own.checkpointing_off,
                        own.save_flag, own.save_path, non_writer});
    }
  }
  if (judged.empty()) return out;

  findings.reserve(check_registry().size());  // about one finding per check
  std::vector<PartResult> results;            // reused by each check
  for (const auto& check : check_registry()) {
    if (!policy.check_enabled(check.id) || skipped_for(row, check.id)) continue;
    results.clear();
    for (const auto& [pod, accelerator, workload_class, destination, saving_off, save_flag, save_at, non_writer] :
         judged) {
      if (!policy.check_applies(check.id, workload_class)) continue;
      // A coordinator writes no checkpoints, nor does a helper (it prepares the job), nor a
      // part beside the job's named writers that names no save path: the writers are judged.
      if (check.id == kCheckpointVolume && (pod->coordinator || pod->helper || non_writer)) continue;
      const WorkloadKind* part_row = pod_row(*pod, row, policy);
      if (skipped_for(part_row, check.id)) continue;
      const CheckContext ctx{object,      policy,     cluster, cluster_unavailable, accelerator, workload_class,
                             destination, saving_off, save_at, save_flag,           part_row};
      auto gap = check.run(*pod, ctx);
      if (!gap) continue;
      if (gap->outcome == Outcome::kFinding &&
          (exempts(object.annotations, check.id) || exempts(pod->annotations, check.id))) {
        gap->outcome = Outcome::kExempt;
        gap->reason = exempt_reason(*pod, object);
        gap->remedy.clear();  // the owner chose: nothing to fix
      }
      results.push_back({pod, std::move(*gap)});
    }
    const std::size_t first = findings.size();
    group(check, results, findings);
    if (policy.action(check.id) == CheckAction::kAudit) {
      for (auto it = findings.begin() + static_cast<std::ptrdiff_t>(first); it != findings.end(); ++it) {
        it->audit_only = true;
      }
    }
  }
  link_restart_to_checkpoint(findings);
  return out;
}

std::vector<Finding> evaluate(const WorkloadView& object, const ClusterSnapshot* cluster, const Policy& policy,
                              std::string_view cluster_unavailable, const ClusterSnapshot* claims) {
  return evaluate_object_view(object, cluster, policy, cluster_unavailable, claims).findings;
}

}  // namespace kubegap
