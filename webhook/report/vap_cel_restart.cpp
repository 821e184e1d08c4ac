#include <string>
#include <vector>

#include "policies/checks.h"
#include "webhook/core/errors.h"
#include "webhook/core/template_path.h"
#include "webhook/report/vap_cel.h"

// GCC 12 at -O2 warns falsely (-Wrestrict, GCC bug 105329) on `literal + std::string`
// temporaries inlined here; the text built is only CEL for `export vap`.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

// The CEL of restart-on-failure: policies/restart_on_failure.cpp written out per model
// (job, jobset, replicas, volcano), with the same words, so that the VAP's warnings are
// the webhook's. Every branch below mirrors one `finding(...)` there, in the same order;
// change them together (e2e_vap compares the two on a real API server).
namespace kubegap::vap_cel {
namespace {

constexpr std::string_view kIgnoreDisruptions = "{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}";
const std::string kNone = "['', '', '']";

// Knob: a plain field path from the object, as CEL: whether it is there, and its value.
struct Knob {
  std::string present, value;
};

Knob knob_at(const WorkloadKind& row, const std::string& path) {
  std::vector<std::string_view> fields;
  for (const auto& s : template_path_segments(path)) {
    if (s.array || s.field == "*") {
      throw ConfigError("export vap: " + row.kind + ": restart path \"" + path +
                        "\" walks a list or map, which the CEL export cannot");
    }
    fields.push_back(s.field);
  }
  Knob k;
  k.present = has_chain("object", fields, &k.value);
  return k;
}

// first_action: the action of the first rule of `list` that `matches` (CEL over `r`), or
// '' (rules are matched in order and the first match decides).
std::string first_action(const std::string& list, const std::string& matches) {
  const std::string hit = "(" + list + ").filter(r, " + matches + ")[0]";
  return "((" + list + ").exists(r, " + matches + ") ? (has(" + hit + ".action) ? string(" + hit +
         ".action) : '') : '')";
}

// A batch/v1 PodFailurePolicyRule matching a pod condition (status True by default); a
// rule on exit codes is narrowed and never decides here.
std::string job_rule_on(std::string_view condition) {
  return "!has(r.onExitCodes) && has(r.onPodConditions) && r.onPodConditions.exists(c, has(c.type) && c.type == '" +
         std::string(condition) + "' && (!has(c.status) || c.status == '' || c.status == 'True'))";
}

// A JobSet FailurePolicyRule matching a child Job's failure reason (`reason` empty: only
// the rules with no reasons, which match every failure); one narrowed to some replicated
// jobs or messages never decides here.
std::string jobset_rule_on(std::string_view reason) {
  const std::string every = "(!has(r.onJobFailureReasons) || size(r.onJobFailureReasons) == 0)";
  const std::string on =
      reason.empty() ? every : "(" + every + " || '" + std::string(reason) + "' in r.onJobFailureReasons)";
  return "!(has(r.targetReplicatedJobs) && size(r.targetReplicatedJobs) > 0) && !(has(r.onJobFailureMessagePatterns) "
         "&& size(r.onJobFailureMessagePatterns) > 0) && " +
         on;
}

// A Volcano LifecyclePolicy on an event.
std::string volcano_rule_on(std::string_view event) {
  const std::string e = "'" + std::string(event) + "'";
  return "((has(r.event) && r.event == " + e + ") || (has(r.events) && " + e + " in r.events))";
}

std::string rules_list(const Knob& rules) { return "(" + rules.present + " ? " + rules.value + " : [])"; }

std::string gap(const std::string& message, const std::string& fix, const std::string& reason) {
  return "[" + message + ", " + fix + ", " + reason + "]";
}

// The object's budget: rSet (written as an integer), rBudget (its value, or the default),
// rPlaceholder (written as something else: an unrendered template, set at deploy time,
// which the webhook notes and does not judge).
void add_budget_variables(const WorkloadKind& row, std::vector<Variable>& out) {
  // An unset budget with no default: unlimited, except for a JobSet (0, as its check reads it).
  const RestartRow& r = row.restart;
  const Knob b = knob_at(row, r.budget);
  const bool per_index = !r.per_index_budget.empty();
  const Knob pi = per_index ? knob_at(row, r.per_index_budget) : Knob{"false", "0"};
  const std::string b_set = "(" + b.present + " && type(" + b.value + ") == int)";
  const std::string pi_set = per_index ? "(" + pi.present + " && type(" + pi.value + ") == int)" : "false";
  out.push_back({"rPlaceholder", "(" + b.present + " && type(" + b.value + ") != int)" +
                                     (per_index ? " || (" + pi.present + " && type(" + pi.value + ") != int)" : "")});
  out.push_back({"rPerIndex", pi_set});
  out.push_back({"rSet", "variables.rPerIndex || " + b_set});
  const std::string fallback = r.budget_default ? std::to_string(*r.budget_default) : r.model == "jobset" ? "0" : "-1";
  out.push_back(
      {"rBudget", "variables.rPerIndex ? int(" + pi.value + ") : " + b_set + " ? int(" + b.value + ") : " + fallback});
  out.push_back({"rPath", per_index ? "variables.rPerIndex ? " + quote(r.per_index_budget) + " : " + quote(r.budget)
                                    : quote(r.budget)});
  // budget_text: "spec.backoffLimit is 0" or "spec.backoffLimit is unset (0 by default)".
  out.push_back({"rAt",
                 "variables.rSet ? variables.rPath + ' is ' + string(variables.rBudget) : variables.rPath + "
                 "' is unset (' + string(variables.rBudget) + ' by default)'"});
}

// judge_job: a Job, a CronJob's Jobs, an MPIJob's launcher Job, a RayJob's retries.
std::string job_gap(const WorkloadKind& row, const std::string& kind, const std::string& min,
                    std::vector<Variable>& out) {
  const RestartRow& r = row.restart;
  const bool has_rules = !r.rules.empty();
  const std::string rules_path = has_rules ? r.rules.substr(0, r.rules.rfind('.')) : "";
  out.push_back({"rDisrupt",
                 has_rules ? first_action(rules_list(knob_at(row, r.rules)), job_rule_on("DisruptionTarget")) : "''"});
  const std::string spare = has_rules ? " and add the " + rules_path + " rule " + std::string(kIgnoreDisruptions) : "";
  const std::string cost =
      "': drains and preemptions use it up (' + string(variables.rBudget + 1) + ' failures end the run)'";
  const std::string unlimited = r.budget_default ? "false" : "!variables.rSet";
  const std::string on_failure = "has(s.restartPolicy) && s.restartPolicy == 'OnFailure'";
  return "(" + unlimited + ") ? " + kNone + " : variables.rDisrupt == 'FailJob' ? " +
         gap(quote("a " + rules_path + " rule fails the " + kind +
                   " on DisruptionTarget: the first drain or preemption ends the run"),
             quote("change that rule's action to Ignore, so drains and preemptions are retried without counting"),
             quote(rules_path + " fails the job on DisruptionTarget")) +
         " : variables.rBudget == 0 ? " +
         gap("variables.rAt + ': one failed pod or lost node ends the run'",
             "'set ' + variables.rPath + ' to " + min + " or more" + spare + "'", "variables.rAt + ': no restart'") +
         " : variables.rBudget >= " + min + " || variables.rDisrupt == 'Ignore' || " + (has_rules ? "false" : "true") +
         " ? " + kNone + " : cel_s(i)(" + on_failure + ") ? " +
         gap("variables.rAt + ' and restartPolicy OnFailure cannot spare disruptions' + " + cost,
             "'raise ' + variables.rPath + ' to " + min + " or more, or use restartPolicy Never" + spare + "'",
             "variables.rAt + ', disruptions count against it'") +
         " : " +
         gap("variables.rAt + ' and no podFailurePolicy rule ignores DisruptionTarget' + " + cost,
             "'add the " + rules_path + " rule " + std::string(kIgnoreDisruptions) + " or raise ' + variables.rPath",
             "variables.rAt + ', disruptions count against it'");
}

// judge_jobset: a JobSet, and a Trainer runtime's JobSet template.
std::string jobset_gap(const WorkloadKind& row, const std::string& kind, const std::string& min,
                       std::vector<Variable>& out) {
  const RestartRow& r = row.restart;
  const std::string rules = r.rules.empty() ? "[]" : rules_list(knob_at(row, r.rules));
  out.push_back({"rEvery", first_action(rules, jobset_rule_on(""))});
  out.push_back({"rRouted", first_action(rules, jobset_rule_on("PodFailurePolicy"))});
  const std::string h = "variables.holders[i]";
  // The child Job's own budget and rules (6: batch/v1's default backoffLimit).
  out.push_back({"rChild", "lists.range(size(variables.specs)).map(i, " +
                               first_action("(has(" + h + ".podFailurePolicy) && has(" + h +
                                                ".podFailurePolicy.rules) ? " + h + ".podFailurePolicy.rules : [])",
                                            job_rule_on("DisruptionTarget")) +
                               ")"});
  out.push_back({"rChildBudget", "lists.range(size(variables.specs)).map(i, !has(" + h + ".backoffLimit) ? 6 : type(" +
                                     h + ".backoffLimit) == int ? int(" + h + ".backoffLimit) : -1)"});
  const std::string path = r.budget;
  // An unrendered child budget ($RETRIES) is noted, not judged.
  return "variables.rChildBudget[i] == -1 ? " + kNone +
         " : variables.rEvery in ['RestartJobSetAndIgnoreMaxRestarts', 'RestartJobAndIgnoreMaxRestarts'] ? " + kNone +
         " : variables.rEvery == 'FailJobSet' ? " +
         gap(quote("a failurePolicy rule fails the " + kind + " on any failed child Job"),
             quote("restart instead: set " + path + " to " + min + " or more"),
             quote("failurePolicy fails on any child failure")) +
         " : variables.rBudget == 0 ? " +
         gap("variables.rAt + ': one failed child Job ends the " + kind + "'",
             quote("set " + path + " to " + min + " or more"), "variables.rAt + ': no restart'") +
         " : variables.rBudget >= " + min +
         " || variables.rChild[i] == 'Ignore' || (variables.rChild[i] == 'FailJob' && "
         "variables.rRouted.endsWith('AndIgnoreMaxRestarts')) || variables.rChildBudget[i] >= " +
         min + " ? " + kNone + " : " +
         gap("variables.rAt + ' and its child Jobs do not spare disruptions: drains and preemptions use it up (' + "
             "string(variables.rBudget + 1) + ' failures end the " +
                 kind + ")'",
             quote("add the child Job's podFailurePolicy rule " + std::string(kIgnoreDisruptions) +
                   " (restartPolicy Never), or raise " + path),
             "variables.rAt + ', disruptions count against it'");
}

// judge_replicas: the Kubeflow training-operator kinds.
std::string replicas_gap(const WorkloadKind& row, const std::string& kind, const std::string& min) {
  const RestartRow& r = row.restart;
  const std::string h = "variables.holders[i]";
  const std::string written = "(has(" + h + ".restartPolicy) && string(" + h + ".restartPolicy) != '')";
  const std::string policy =
      "(" + written + " ? string(" + h + ".restartPolicy) : " + quote(r.replica_restart_default) + ")";
  const std::string said = "(" + written + " ? 'restartPolicy ' + " + policy + " : " +
                           quote("restartPolicy unset (" + r.replica_restart_default + " by default)") + ")";
  const bool on_failure = std::find(r.restarting.begin(), r.restarting.end(), "OnFailure") != r.restarting.end();
  const std::string to = on_failure ? "ExitCode (or OnFailure)" : "ExitCode";
  return "!(" + policy + " in " + list_of(r.restarting) + ") ? " +
         gap(said + " + ': one failed (or drained) pod of this replica fails the " + kind + "'",
             quote("set the replica's restartPolicy to " + to +
                   " (ExitCode retries exit codes 128-255, as a drain's kill gives)"),
             said + " + ': no restart'") +
         " : variables.rSet && variables.rBudget == 0 ? " +
         gap("variables.rAt + ': one failed pod ends the run'",
             quote("set " + r.budget + " to " + min + " or more, or leave it unset"),
             "variables.rAt + ': no restart'") +
         " : " + kNone;
}

// judge_volcano: a task's policies are matched before the job's.
std::string volcano_gap(const WorkloadKind& row, const std::string& min, std::vector<Variable>& out) {
  const RestartRow& r = row.restart;
  const std::string h = "variables.holders[i]";
  out.push_back({"rRules", "lists.range(size(variables.specs)).map(i, (has(" + h + ".policies) ? " + h +
                               ".policies : []) + " + (r.rules.empty() ? "[]" : rules_list(knob_at(row, r.rules))) +
                               ")"});
  // The action on PodFailed, else on any event ('*').
  const std::string rules = "variables.rRules[i]";
  out.push_back({"rAction", "lists.range(size(variables.specs)).map(i, [" +
                                first_action(rules, volcano_rule_on("PodFailed")) + ", " +
                                first_action(rules, volcano_rule_on("*")) + "]).map(p, p[0] != '' ? p[0] : p[1])"});
  const std::string fix = quote(
      "add spec.policies [{event: PodFailed, action: RestartJob}, {event: PodEvicted, action: RestartJob}] with " +
      r.budget + " " + min + " or more");
  const std::string a = "variables.rAction[i]";
  return a + " in ['AbortJob', 'TerminateJob'] ? " +
         gap("'a lifecycle policy runs ' + " + a + " + ' when a pod fails: one failed pod ends the run'", fix,
             "'PodFailed -> ' + " + a + " + ': no restart'") +
         " : " + a + " == '' && cel_s(i)(has(s.restartPolicy) && s.restartPolicy == 'Never') ? " +
         gap(quote("no lifecycle policy restarts anything when a pod fails, and restartPolicy Never: a failed pod "
                   "is never replaced and the run stalls or fails"),
             fix, quote("no PodFailed policy and restartPolicy Never: no restart")) +
         " : " + kNone;
}

}  // namespace

std::vector<Variable> restart_variables(const WorkloadKind& row, const Policy& policy, bool link) {
  std::vector<Variable> out;
  add_budget_variables(row, out);
  // A runtime is a template: what it lacks, every TrainJob made from it lacks.
  const std::string kind = row.kind.ends_with("TrainingRuntime") ? "TrainJob made from it" : row.kind;
  const std::string min = std::to_string(policy.min_restart_budget);
  const std::string& model = row.restart.model;
  const std::string judged = model == "job"        ? job_gap(row, kind, min, out)
                             : model == "jobset"   ? jobset_gap(row, kind, min, out)
                             : model == "replicas" ? replicas_gap(row, kind, min)
                                                   : volcano_gap(row, min, out);
  // The parts judged as training (a coordinator of a training kind too); an auto-class
  // part without evidence is not evaluated (the webhook's `not evaluated` note).
  const bool training = row.workload_class == WorkloadClass::kTraining;
  out.push_back({"rJudged",
                 "lists.range(size(variables.specs)).map(i, variables.rPlaceholder || !(variables.cClass[i] "
                 "== 't'" +
                     std::string(training ? " || variables.cClass[i] == 'c'" : "") + ") ? " + kNone + " : " + judged +
                     ")"});
  // The fix says a restart resumes only from a durable checkpoint, and points at the
  // checkpoint-volume finding when there is one (policies/evaluate.cpp).
  const std::string linked =
      link ? " + (variables.cGap.exists(g, g[0] != '') && !('checkpoint-volume' in variables.exempt) ? ' (see the "
             "checkpoint-volume finding)' : '')"
           : "";
  out.push_back({"rGap",
                 "variables.rJudged.map(g, g[0] == '' ? g : [g[0], g[1] + '; it resumes only from a durable "
                 "checkpoint'" +
                     linked + ", g[2]])"});
  return out;
}

}  // namespace kubegap::vap_cel
