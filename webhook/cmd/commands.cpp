#include "webhook/cmd/commands.h"

#include "policies/checks.h"
#include "webhook/core/case_library.h"

namespace kubegap {
namespace {

using V = CompletionFlag::Value;

// Flags several commands share.
FlagSpec policy_flag() {
  return {
      "--policy",    "-p",     "FILE", "",   "the built-in defaults", "policy YAML overriding the built-in defaults",
      "policy YAML", V::kFile, {},     false};
}
FlagSpec report_output_flag() {
  return {"--output",
          "-o",
          "FORMAT",
          "text",
          "",
          "report format: text, json, or sarif (SARIF 2.1.0, for code scanning)",
          "report format",
          V::kWords,
          {"text", "json", "sarif"},
          false};
}
FlagSpec color_flag() {
  return {"--color", "",        "WHEN",
          "auto",    "",        "colour: auto is colour on a terminal, never with NO_COLOR; always or never",
          "colour",  V::kWords, {"auto", "always", "never"},
          false};
}
FlagSpec fail_on_findings_flag() {
  return {"--fail-on-findings", "", "", "", "", "exit 1 when there is a finding", "", V::kNone, {}, false};
}
FlagSpec explain_flag() {
  return {"--explain",
          "",
          "",
          "",
          "",
          "text: under each object, the class of each part (training, serving, auto, diagnostic) and the rule or "
          "hint that decided it",
          "the class of each part and why",
          V::kNone,
          {},
          false};
}

// kubeconfig_flag: --kubeconfig of the commands that read a cluster as a person's tool.
FlagSpec kubeconfig_flag(const char* what) {
  return {"--kubeconfig",
          "",
          "FILE",
          "",
          "in a pod, its service account; else $KUBECONFIG, then ~/.kube/config",
          what,
          "kubeconfig of the cluster",
          V::kFile,
          {},
          false};
}

// allow_insecure_kubeconfig_flag: the opt-in for a kubeconfig that skips TLS verification
// while it sends credentials (vet_tls_verification, webhook/kube/kube_config.h).
FlagSpec allow_insecure_kubeconfig_flag() {
  return {"--allow-insecure-kubeconfig",
          "",
          "",
          "",
          "",
          "accept a kubeconfig whose cluster sets insecure-skip-tls-verify while its user sends credentials "
          "(refused without this flag); a warning is logged either way",
          "accept insecure-skip-tls-verify with credentials",
          V::kNone,
          {},
          false};
}

// serve_spec: the serve command and its flags (a data table).
CommandSpec serve_spec() {
  CommandSpec c;
  c.name = "serve";
  c.summary = "serve the webhook";
  c.usage = "serve --tls-cert FILE --tls-key FILE [flags]";
  c.intro = "Serves POST /validate over HTTPS and /healthz, /readyz, /metrics over plain HTTP.\n";
  c.flags = {
      {"--tls-cert",
       "",
       "FILE",
       "",
       "",
       "serving certificate chain (PEM); reloaded when the file changes",
       "serving certificate chain (PEM)",
       V::kFile,
       {},
       true},
      {"--tls-key",
       "",
       "FILE",
       "",
       "",
       "its private key (PEM); refused if every user can read it",
       "its private key (PEM)",
       V::kFile,
       {},
       true},
      {"--client-ca",
       "",
       "FILE",
       "",
       "none",
       "require a client certificate signed by a CA in FILE (PEM): the API server presents one when its "
       "AdmissionConfiguration names it (docs/security.md); reloaded with the serving certificate",
       "CA bundle a client certificate must chain to",
       V::kFile,
       {},
       false},
      {"--client-names",
       "",
       "LIST",
       "",
       "any name",
       "with --client-ca: serve only a client certificate whose subject CN or a DNS SAN is one of these "
       "comma-separated names (e.g. kube-apiserver)",
       "client certificate names to accept",
       V::kAny,
       {},
       false},
      {"--listen",
       "",
       "HOST:PORT",
       "0.0.0.0:8443",
       "",
       "HTTPS address (POST /validate); port 0 picks a free port",
       "HTTPS address HOST:PORT",
       V::kAny,
       {},
       false},
      {"--health-listen",
       "",
       "HOST:PORT",
       "0.0.0.0:9090",
       "",
       "plain-HTTP address of /healthz, /readyz and /metrics; port 0 picks a free port",
       "health and metrics address HOST:PORT",
       V::kAny,
       {},
       false},
      policy_flag(),
      {"--cluster-state",
       "",
       "FILE",
       "",
       "",
       "PodDisruptionBudgets and Nodes (YAML/JSON List or multi-document) for the disruption-budget and "
       "zone-spread checks, instead of the live view",
       "PodDisruptionBudgets and Nodes from a file",
       V::kFile,
       {},
       false},
      {"--kubeconfig",
       "",
       "FILE",
       "",
       "in a pod, its service account",
       "watch PodDisruptionBudgets and Nodes through this kubeconfig's API server",
       "watch the cluster view through this kubeconfig",
       V::kFile,
       {},
       false},
      allow_insecure_kubeconfig_flag(),
      {"--cluster-sync-timeout",
       "",
       "S",
       "30",
       "",
       "report ready after S seconds even if the live view has not synced (disruption-budget then says "
       "\"not evaluated: cluster view not synced\")",
       "seconds to wait for the cluster view",
       V::kAny,
       {},
       false},
      {"--audit-interval",
       "",
       "S",
       "600",
       "",
       "with a live view: scan what already runs every S seconds, off the review path; 0 turns it off",
       "seconds between background audits (0: off)",
       V::kAny,
       {},
       false},
      {"--audit-reports",
       "",
       "API",
       "wgpolicyk8s",
       "",
       "where the audit's results go besides the metrics: wgpolicyk8s (PolicyReports), openreports "
       "(openreports.io Reports) or none",
       "where audit results go",
       V::kWords,
       {"wgpolicyk8s", "openreports", "none"},
       false},
      {"--audit-lease",
       "",
       "NS/NAME",
       "",
       "$POD_NAMESPACE (else kubegap-system)/kubegap-webhook-audit",
       "the Lease that picks the one replica writing reports",
       "NAMESPACE/NAME of the audit Lease",
       V::kAny,
       {},
       false},
      {"--threads", "", "N", "", "the CPU count", "I/O threads serving reviews", "I/O threads", V::kAny, {}, false},
      {"--max-body-bytes",
       "",
       "N",
       "8388608",
       "",
       "request body limit (413 above it)",
       "request body limit",
       V::kAny,
       {},
       false},
      {"--memory-budget",
       "",
       "BYTES",
       "",
       "the container's memory limit less 64 MiB, 1 GiB without a limit; never less than one request of "
       "--max-body-bytes",
       "memory that requests in flight may be charged (a body costs 3x its size as it arrives, then what its "
       "decode keeps); over it, a request is answered 503 with Retry-After",
       "bytes requests in flight may be charged",
       V::kAny,
       {},
       false},
      {"--max-connections",
       "",
       "N",
       "4096",
       "",
       "open connections; within N/64 of it, each new connection closes another: one silent since accept, "
       "then the oldest request still arriving, then the longest-idle one",
       "open connection cap",
       V::kAny,
       {},
       false},
      {"--first-request-timeout",
       "",
       "S",
       "5",
       "",
       "seconds after the TLS handshake by which the first request's header must arrive",
       "seconds to the first request after the handshake",
       V::kAny,
       {},
       false},
      {"--request-timeout",
       "",
       "S",
       "5",
       "",
       "seconds from a request's first byte by which its header and body must be in (the API server sends "
       "at once); past it the connection is closed and counted",
       "seconds for a request's header and body",
       V::kAny,
       {},
       false},
      {"--max-connections-per-source",
       "",
       "N",
       "",
       "a quarter of --max-connections, at least 16",
       "open connections from one source address; past it a new one from that address is closed on accept",
       "open connection cap per source address",
       V::kAny,
       {},
       false},
      {"--shutdown-timeout",
       "",
       "S",
       "25",
       "",
       "drain bound on SIGTERM/SIGINT, in seconds",
       "drain bound in seconds",
       V::kAny,
       {},
       false},
      {"--reload-interval",
       "",
       "S",
       "2",
       "",
       "how often the certificate and policy files are checked for changes (rotation, ConfigMap update), in "
       "seconds",
       "seconds between file checks",
       V::kAny,
       {},
       false},
      {"--log-level",
       "",
       "LEVEL",
       "info",
       "",
       "log level",
       "log level",
       V::kWords,
       {"trace", "debug", "info", "warn", "error", "off"},
       false},
      {"--log-format", "", "FORMAT", "text", "", "log format", "log format", V::kWords, {"text", "json"}, false},
  };
  return c;
}

CommandSpec check_spec() {
  CommandSpec c;
  c.name = "check";
  c.summary = "check manifests offline";
  c.usage = "check [flags] PATH...";
  c.intro = R"(Finds the same gaps as the webhook in manifests, before they reach a cluster.
PATH is a file, a directory (recursively *.yaml, *.yml, *.json) or - for stdin. Multi-
document YAML, JSON, List kinds and AdmissionReview files are read. PodDisruptionBudgets
and Nodes in the input form the cluster view; without any, disruption-budget is
reported "not evaluated".
)";
  c.flags = {policy_flag(),
             report_output_flag(),
             fail_on_findings_flag(),
             explain_flag(),
             {"--show-skipped",
              "",
              "",
              "",
              "",
              "text: list each object of a kind kubegap does not evaluate (default: one line counting them by "
              "kind)",
              "list each skipped object",
              V::kNone,
              {},
              false},
             color_flag()};
  c.outro = R"(Files that cannot be read (invalid YAML, no apiVersion/kind, a field of the wrong type,
a quantity such as "$GPUS") are listed on stderr as FILE:LINE: MESSAGE, and in the json
(`errors`) and sarif (invocations) outputs; every other object is still checked.
kustomization.yaml, Chart.yaml, values*.yaml and unrendered chart templates are
skipped with a note.

Exit codes: 0 no findings (or findings without --fail-on-findings), 1 findings with
--fail-on-findings, 2 usage or input errors (after the report; input errors win over 1).
)";
  c.file_arguments = true;
  c.takes_arguments = true;
  return c;
}

CommandSpec scan_spec() {
  CommandSpec c;
  c.name = "scan";
  c.summary = "check what runs in a cluster";
  c.usage = "scan [flags]";
  c.intro = R"(Finds the same gaps as the webhook in what already runs: lists, page by page, every
kind of the workload table that the API server serves (a CRD that is not installed is
skipped) and Pods, and evaluates them with the live PodDisruptionBudgets and Nodes. An
object whose controller was evaluated too (a workload's Pods, ReplicaSets, Jobs) is
reported under that controller only. Needs get/list on those kinds, PDBs and Nodes.
)";
  c.flags = {
      kubeconfig_flag("the API server and credentials"),
      allow_insecure_kubeconfig_flag(),
      {"--namespace", "-n", "NS", "", "every namespace", "one namespace", "one namespace", V::kAny, {}, false},
      policy_flag(),
      report_output_flag(),
      {"--page-size", "", "N", "250", "", "objects per list request", "objects per list request", V::kAny, {}, false},
      fail_on_findings_flag(),
      explain_flag(),
      color_flag()};
  c.outro = R"(Resources that cannot be listed (forbidden, an error) are listed on stderr and in the
json/sarif outputs; the rest is still scanned. Exit codes as check: 0, 1 findings with
--fail-on-findings, 2 usage errors or resources that could not be listed.
)";
  return c;
}

CommandSpec export_spec() {
  CommandSpec c;
  c.name = "export";
  c.summary = "the checks in another form";
  c.usage = "export vap [--policy FILE] [--checks LIST]";
  c.intro = R"(Prints (YAML, ready for kubectl apply -f -) ValidatingAdmissionPolicies and their
bindings (admissionregistration.k8s.io/v1, validationActions [Warn, Audit],
failurePolicy Ignore) that run the spec-only checks in the API server itself, in CEL,
without the webhook: one policy per kind of the workload table, generated from the
policy in force: checkpoint-volume, zone-spread (without the cluster view) and
gpu-health-tolerations; disruption-budget needs the cluster's PDBs. docs/vap.md says
what differs from the webhook.
)";
  c.flags = {policy_flag(),
             {"--checks",
              "",
              "LIST",
              "",
              "every check with a CEL form",
              "comma-separated check ids",
              "comma-separated check ids",
              V::kAny,
              {},
              false}};
  c.arguments = {"vap"};
  c.takes_arguments = true;
  return c;
}

CommandSpec cases_spec() {
  CommandSpec c;
  c.name = "cases";
  c.summary = "the cases behind each check";
  c.usage = "cases [ID] [--output text|json]";
  c.intro = R"(Without ID: for each check, its fix and the public incident cases it cites, in the
order it cites them (a warning prints the first), each with the one-line reason it
backs the check. With a case id: that case in full (what its sources say, each figure
with its URL, kept apart from our reading of it). With a check id: that check only.
)";
  c.flags = {{"--output", "-o", "FORMAT", "text", "", "format", "format", V::kWords, {"text", "json"}, false}};
  for (const auto& check : check_registry()) c.arguments.emplace_back(check.id);
  for (const auto& found : case_library().cases()) c.arguments.push_back(found.id);
  c.takes_arguments = true;
  return c;
}

CommandSpec completion_spec() {
  CommandSpec c;
  c.name = "completion";
  c.summary = "print a shell completion script";
  c.usage = "completion bash|zsh";
  c.intro = R"(Prints a shell completion script (commands, flags, their values, case and check ids).

  source <(kubegap-webhook completion bash)                      # this bash session
  kubegap-webhook completion bash > /usr/share/bash-completion/completions/kubegap-webhook
  kubegap-webhook completion zsh > "${fpath[1]}/_kubegap-webhook"  # zsh, then compinit
)";
  c.arguments = {"bash", "zsh"};
  c.takes_arguments = true;
  return c;
}

CommandSpec version_spec() {
  CommandSpec c;
  c.name = "version";
  c.summary = "print the version";
  c.usage = "version";
  c.intro = "Prints the version.\n";
  return c;
}

CommandSpec help_spec(const std::vector<CommandSpec>& commands) {
  CommandSpec c;
  c.name = "help";
  c.summary = "help for a command";
  c.usage = "help [COMMAND]";
  c.intro = "Prints the help of COMMAND (the same as COMMAND --help), or of kubegap-webhook.\n";
  c.flags = {{"--flag-reference",
              "",
              "",
              "",
              "",
              "print every command's flags as the Markdown tables of docs/cli.md",
              "the flag reference in Markdown",
              V::kNone,
              {},
              false}};
  for (const auto& command : commands) c.arguments.push_back(command.name);
  c.takes_arguments = true;
  return c;
}

// mcp_spec: the MCP server for coding agents (docs/mcp.md).
CommandSpec mcp_spec() {
  CommandSpec c;
  c.name = "mcp";
  c.summary = "serve the checks to coding agents (MCP over stdio)";
  c.usage = "mcp [flags]";
  c.intro = R"(A Model Context Protocol server on stdin/stdout, for Claude Code, Codex and other
agents: the tools check_manifests, scan_cluster, explain, list_checks and get_case, each
case and the policy as resources, and the prompt audit-training-reliability. It only
reads: the cluster with GET requests, files under the client's roots. Logs go to stderr.
)";
  c.flags = {
      kubeconfig_flag("the API server and credentials of scan_cluster and explain"),
      allow_insecure_kubeconfig_flag(),
      {"--context",
       "",
       "NAME",
       "",
       "the kubeconfig's current-context",
       "the kubeconfig context tools use when "
       "they name none",
       "kubeconfig context",
       V::kAny,
       {},
       false},
      policy_flag(),
      {"--request-timeout",
       "",
       "S",
       "120",
       "",
       "a tool call that reads the cluster answers within S seconds (an error result if the cluster is too slow)",
       "seconds a cluster call may take",
       V::kAny,
       {},
       false},
      {"--max-message-bytes",
       "",
       "N",
       "16777216",
       "",
       "a message (one line) larger than N is dropped unread and answered with an error",
       "largest message",
       V::kAny,
       {},
       false},
      {"--log-level",
       "",
       "LEVEL",
       "warn",
       "",
       "log level (stderr)",
       "log level",
       V::kWords,
       {"trace", "debug", "info", "warn", "error", "off"},
       false},
  };
  c.outro = R"(Register it with Claude Code: claude mcp add kubegap -- kubegap-webhook mcp
With Codex: [mcp_servers.kubegap] command = "kubegap-webhook", args = ["mcp"] in
~/.codex/config.toml. Exit code 0 on end of input, SIGTERM or SIGINT; 2 on a usage error.
)";
  return c;
}

std::vector<CommandSpec> make_specs() {
  std::vector<CommandSpec> specs = {serve_spec(), check_spec(), scan_spec(),       export_spec(),
                                    cases_spec(), mcp_spec(),   completion_spec(), version_spec()};
  specs.push_back(help_spec(specs));
  return specs;
}

}  // namespace

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> kSpecs = make_specs();
  return kSpecs;
}

const CommandSpec* find_command(std::string_view name) {
  for (const auto& spec : command_specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string main_help() {
  return R"(kubegap-webhook: a validating admission webhook, in audit mode, for ML training jobs.
It always allows; it warns about missing checkpoint volumes, PodDisruptionBudgets,
single-zone pins and GPU health tolerations, citing public incident cases.

Usage:
  kubegap-webhook serve --tls-cert FILE --tls-key FILE [flags]   serve the webhook
  kubegap-webhook check [flags] PATH...                           check manifests offline
  kubegap-webhook scan [flags]                                    check what runs in a cluster
  kubegap-webhook export vap [--policy FILE] [--checks LIST]      the checks as ValidatingAdmissionPolicies
  kubegap-webhook cases [ID] [--output text|json]                 the cases behind each check
  kubegap-webhook completion bash|zsh                             shell completion script
  kubegap-webhook version                                         print the version

Run 'kubegap-webhook help COMMAND' (or COMMAND --help) for a command's flags.
Short flags: -o for --output, -p for --policy, -n for --namespace (scan), -h for --help.
)";
}

}  // namespace kubegap
