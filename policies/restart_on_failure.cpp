// RestartOnFailureCheck: the checks above make sure a checkpoint survives; this one makes
// sure something resumes from it. Long training runs fail often (OPT-175B: about 90
// restarts over one lineage; BLOOM: a GPU died about weekly and the job restarted by
// itself), and Kubernetes restarts a job only within the budget its kind sets. Two gaps:
//   (a) no restart at all: one failed pod or lost node ends the whole run;
//   (b) a small budget that drains, preemptions and evictions use up, because nothing
//       spares failures the API marks with the DisruptionTarget pod condition (only
//       where the kind can: a Job, a JobSet's child Jobs).
// How each controller combines its knobs (docs/restart-on-failure-research.md cites the
// code for each) is one function per RestartRow model; where the knobs are is data.
#include <algorithm>

#include "policies/checks.h"
#include "policies/classifier.h"  // kTrainingJobAnnotation

namespace kubegap {
namespace {

constexpr std::string_view kDisruptionTarget = "DisruptionTarget";
constexpr std::string_view kIgnoreDisruptions = "{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}";

bool contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Judged: what the check knows about one part besides its knobs.
struct Judged {
  const RestartRow& row;
  const RestartKnobs& knobs;
  std::string kind;  // the kind that restarts (the wrapped object's own, for a Katib trial)
  std::int64_t min_budget;
  bool from_runtime;  // a TrainJob: its runtime holds the knobs
};

// budget_text: "spec.backoffLimit is 0" or "spec.backoffLimit is unset (0 by default)".
std::string budget_text(const std::string& path, const std::optional<std::int64_t>& written, std::int64_t value) {
  if (written) return path + " is " + std::to_string(value);
  return path + " is unset (" + std::to_string(value) + " by default)";
}

Gap finding(std::string message, std::string reason, std::string remedy) {
  return Gap{Outcome::kFinding, std::move(message), std::move(reason), std::move(remedy)};
}

// first_action: the action of the first rule that matches `on` (rules are matched in
// order and the first match decides, in Job podFailurePolicy, JobSet failurePolicy and
// Volcano policies alike); an empty `on` list matches everything where `match_all`.
std::string first_action(const std::vector<RestartRule>& rules, std::string_view on, bool match_all) {
  for (const auto& rule : rules) {
    if (rule.narrowed) continue;
    if (contains(rule.on, on) || (match_all && rule.on.empty())) return rule.action;
  }
  return {};
}

// A batch/v1 Job, and the Job-shaped budgets other controllers keep (an MPIJob's
// launcher Job, a RayJob's retries). isPodFailed counts a deleted pod as failed unless a
// podFailurePolicy rule decides; an Ignore rule on DisruptionTarget spares it.
std::optional<Gap> judge_job(const PodSpecView& pod, const Judged& j) {
  const bool per_index = j.knobs.per_index_budget.has_value();
  const std::string& path = per_index ? j.row.per_index_budget : j.row.budget;
  const std::optional<std::int64_t> written = per_index ? j.knobs.per_index_budget : j.knobs.budget;
  if (!written && !j.row.budget_default) return std::nullopt;  // unlimited
  const std::int64_t budget = written ? *written : *j.row.budget_default;
  const bool has_rules = !j.row.rules.empty();
  const std::string disruption = has_rules ? first_action(j.knobs.rules, kDisruptionTarget, false) : "";
  const std::string rules_path = has_rules ? j.row.rules.substr(0, j.row.rules.rfind('.')) : "";
  if (disruption == "FailJob") {
    return finding("a " + rules_path + " rule fails the " + j.kind +
                       " on DisruptionTarget: the first drain or preemption ends the run",
                   rules_path + " fails the job on DisruptionTarget",
                   "change that rule's action to Ignore, so drains and preemptions are retried without counting");
  }
  const std::string at = budget_text(path, written, budget);
  const std::string spare =
      has_rules ? " and add the " + rules_path + " rule " + std::string(kIgnoreDisruptions) : std::string();
  if (budget == 0) {
    return finding(at + ": one failed pod or lost node ends the run", at + ": no restart",
                   "set " + path + " to " + std::to_string(j.min_budget) + " or more" + spare);
  }
  // (b) only where the kind can spare disruptions: without a rule to add, a larger budget
  // is a matter of taste, not a gap the owner can close (an MPIJob launcher, a RayJob).
  if (budget >= j.min_budget || disruption == "Ignore" || !has_rules) return std::nullopt;
  const std::string cost =
      ": drains and preemptions use it up (" + std::to_string(budget + 1) + " failures end the run)";
  if (pod.restart_policy == "OnFailure") {
    // The API refuses a podFailurePolicy with restartPolicy OnFailure.
    return finding(
        at + " and restartPolicy OnFailure cannot spare disruptions" + cost, at + ", disruptions count against it",
        "raise " + path + " to " + std::to_string(j.min_budget) + " or more, or use restartPolicy Never" + spare);
  }
  return finding(at + " and no podFailurePolicy rule ignores DisruptionTarget" + cost,
                 at + ", disruptions count against it",
                 "add the " + rules_path + " rule " + std::string(kIgnoreDisruptions) + " or raise " + path);
}

// A JobSet (jobset v0.12.0): without failurePolicy, or with maxRestarts 0, the first
// failed child Job fails it; a rule that restarts while ignoring maxRestarts for every
// failure makes the budget unlimited.
std::optional<Gap> judge_jobset(const PodSpecView&, const Judged& j) {
  const std::string every = first_action(j.knobs.rules, "", true);
  if (every == "RestartJobSetAndIgnoreMaxRestarts" || every == "RestartJobAndIgnoreMaxRestarts") return std::nullopt;
  const std::int64_t budget = j.knobs.budget.value_or(j.row.budget_default.value_or(0));
  const std::string at = budget_text(j.row.budget, j.knobs.budget, budget);
  const std::string where = j.from_runtime ? " in the runtime spec.runtimeRef names (a TrainJob cannot set it)" : "";
  const std::string runtime_path = j.from_runtime ? "spec.template." + j.row.budget : j.row.budget;
  if (every == "FailJobSet") {
    return finding("a failurePolicy rule fails the " + j.kind + " on any failed child Job",
                   "failurePolicy fails on any child failure",
                   "restart instead: set " + runtime_path + " to " + std::to_string(j.min_budget) + " or more" + where);
  }
  if (budget == 0) {
    return finding(at + ": one failed child Job ends the " + j.kind, at + ": no restart",
                   "set " + runtime_path + " to " + std::to_string(j.min_budget) + " or more" + where);
  }
  if (budget >= j.min_budget) return std::nullopt;
  // A child Job that a disruption cannot fail: it ignores DisruptionTarget, or it fails on
  // it with reason PodFailurePolicy and a JobSet rule restarts without counting that.
  const std::string child = first_action(j.knobs.part_rules, kDisruptionTarget, false);
  const std::string routed = first_action(j.knobs.rules, "PodFailurePolicy", true);
  if (child == "Ignore" || (child == "FailJob" && routed.ends_with("AndIgnoreMaxRestarts"))) return std::nullopt;
  if (j.knobs.part_budget.value_or(6) >= j.min_budget) return std::nullopt;  // the child Job's own retries
  return finding(at + " and its child Jobs do not spare disruptions: drains and preemptions use it up (" +
                     std::to_string(budget + 1) + " failures end the " + j.kind + ")",
                 at + ", disruptions count against it",
                 "add the child Job's podFailurePolicy rule " + std::string(kIgnoreDisruptions) +
                     " (restartPolicy Never), or raise " + runtime_path + where);
}

// Kubeflow training-operator kinds (v1.9.0): a replica whose restartPolicy the controller
// does not restart fails the whole job on its first failed pod (a drained pod counts as
// failed); runPolicy.backoffLimit, unset, is unlimited. Nothing reads DisruptionTarget,
// so a small budget is no (b) gap here.
std::optional<Gap> judge_replicas(const PodSpecView&, const Judged& j) {
  const bool written = !j.knobs.replica_restart_policy.empty();
  const std::string& policy = written ? j.knobs.replica_restart_policy : j.row.replica_restart_default;
  if (!contains(j.row.restarting, policy)) {
    const std::string said = written ? "restartPolicy " + policy : "restartPolicy unset (" + policy + " by default)";
    const std::string to = contains(j.row.restarting, "OnFailure") ? "ExitCode (or OnFailure)" : "ExitCode";
    return finding(
        said + ": one failed (or drained) pod of this replica fails the " + j.kind, said + ": no restart",
        "set the replica's restartPolicy to " + to + " (ExitCode retries exit codes 128-255, as a drain's kill gives)");
  }
  if (!j.knobs.budget) return std::nullopt;  // unlimited
  const std::string at = budget_text(j.row.budget, j.knobs.budget, *j.knobs.budget);
  if (*j.knobs.budget == 0) {
    return finding(at + ": one failed pod ends the run", at + ": no restart",
                   "set " + j.row.budget + " to " + std::to_string(j.min_budget) + " or more, or leave it unset");
  }
  return std::nullopt;  // a small budget: nothing in these kinds can spare disruptions
}

// Volcano (v1.15.1): a task's policies are matched before the job's. With no policy for
// PodFailed a failed pod is never replaced; Restart* actions retry up to maxRetry.
std::optional<Gap> judge_volcano(const PodSpecView& pod, const Judged& j) {
  std::vector<RestartRule> rules = j.knobs.part_rules;
  rules.insert(rules.end(), j.knobs.rules.begin(), j.knobs.rules.end());
  std::string action = first_action(rules, "PodFailed", false);
  if (action.empty()) action = first_action(rules, "*", false);
  const std::string fix =
      "add spec.policies [{event: PodFailed, action: RestartJob}, {event: PodEvicted, action: "
      "RestartJob}] with " +
      j.row.budget + " " + std::to_string(j.min_budget) + " or more";
  if (action == "AbortJob" || action == "TerminateJob") {
    return finding("a lifecycle policy runs " + action + " when a pod fails: one failed pod ends the run",
                   "PodFailed -> " + action + ": no restart", fix);
  }
  if (action.empty()) {
    if (pod.restart_policy != "Never") return std::nullopt;  // the kubelet restarts its containers
    return finding(
        "no lifecycle policy restarts anything when a pod fails, and restartPolicy Never: a failed pod "
        "is never replaced and the run stalls or fails",
        "no PodFailed policy and restartPolicy Never: no restart", fix);
  }
  // A Restart* action retries (maxRetry; 0 is made 3): Volcano has no rule that could
  // spare disruptions, so a small maxRetry is not a gap the owner can close.
  return std::nullopt;
}

}  // namespace

std::optional<Gap> check_restart_on_failure(const PodSpecView& pod, const CheckContext& ctx) {
  // A Pod is judged with its owner's row, but its owner's knobs are not in it.
  if (ctx.object.kind == "Pod" && ctx.object.api_group.empty()) return std::nullopt;
  const WorkloadKind* row = ctx.row;
  // A bare Pod, a serving controller: nobody keeps a budget of restarts to judge.
  if (row == nullptr || row->restart.model.empty()) return std::nullopt;
  if (ctx.workload_class == WorkloadClass::kAuto) {
    return not_evaluated(std::string("no sign that this pod trains (label it ") + kTrainingJobAnnotation +
                         ": \"true\" to check it)");
  }
  if (pod.restart.placeholder) return note("restart budget is a placeholder, set at deploy time");
  // A runtime is a template: what it lacks, every TrainJob made from it lacks.
  const bool runtime = row->kind.ends_with("TrainingRuntime");
  const Judged j{row->restart, pod.restart, runtime ? "TrainJob made from it" : row->kind,
                 ctx.policy.min_restart_budget, !row->resolve.empty()};
  std::optional<Gap> gap;
  const std::string& model = row->restart.model;
  if (model == "job") gap = judge_job(pod, j);
  if (model == "jobset") gap = judge_jobset(pod, j);
  if (model == "replicas") gap = judge_replicas(pod, j);
  if (model == "volcano") gap = judge_volcano(pod, j);
  if (gap && !gap->remedy.empty()) gap->remedy += "; it resumes only from a durable checkpoint";
  return gap;
}

}  // namespace kubegap
