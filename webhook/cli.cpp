#include "webhook/cli.h"

#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "webhook/build_info.h"
#include "policies/checks.h"
#include "webhook/case_library.h"
#include "webhook/cluster_state_file.h"
#include "webhook/cluster_watcher.h"
#include "webhook/completion.h"
#include "webhook/kube_config.h"
#include "webhook/health_server.h"
#include "webhook/logging.h"
#include "webhook/background_audit.h"
#include "webhook/cluster_scan.h"
#include "webhook/offline_check.h"
#include "webhook/vap_export.h"
#include "webhook/policy_loader.h"
#include "webhook/server.h"
#include "webhook/reloaders.h"
#include "webhook/tls.h"

namespace kubegap {
namespace {

namespace net = boost::asio;

// The name users typed: "kubegap-webhook", or "kubectl kubegap" when the binary runs as
// the kubectl plugin kubectl-kubegap (a symlink); help and usage say it back.
std::string g_display_name = "kubegap-webhook";

// with_name: a help text with the program's name as the user calls it.
std::string with_name(std::string_view text) {
  std::string out(text);
  if (g_display_name == "kubegap-webhook") return out;
  const std::string from = "kubegap-webhook ";
  for (auto at = out.find(from); at != std::string::npos; at = out.find(from, at + g_display_name.size() + 1)) {
    out.replace(at, from.size(), g_display_name + " ");
  }
  return out;
}

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

constexpr const char* kMainHelp = R"(kubegap-webhook: a validating admission webhook, in audit mode, for ML training jobs.
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

constexpr const char* kServeHelp = R"(Usage: kubegap-webhook serve --tls-cert FILE --tls-key FILE [flags]

Serves POST /validate over HTTPS and /healthz, /readyz, /metrics over plain HTTP.

Flags:
  --tls-cert FILE            serving certificate chain (PEM)            (required)
  --tls-key FILE             its private key (PEM, not readable by every user)
                                                                        (required)
  --client-ca FILE           require a client certificate signed by a CA in FILE
                             (PEM): the API server presents one when its
                             AdmissionConfiguration names it (README); reloaded
                             with the serving certificate
  --listen HOST:PORT         HTTPS address                    (default 0.0.0.0:8443)
  --health-listen HOST:PORT  health and metrics address       (default 0.0.0.0:9090)
  -p, --policy FILE          policy YAML overriding the built-in defaults
  --cluster-state FILE       PodDisruptionBudgets and Nodes (YAML/JSON List or
                             multi-document) for the disruption-budget and
                             zone-spread checks, instead of the live view
  --kubeconfig FILE          watch PodDisruptionBudgets and Nodes through this
                             kubeconfig's API server (in a pod, the service
                             account is used without this flag)
  --cluster-sync-timeout S   report ready after S seconds even if the live view
                             has not synced (default 30; disruption-budget then
                             says "not evaluated: cluster view not synced")
  --audit-interval S         with a live view: scan what already runs every S
                             seconds, off the review path (default 600; 0: off)
  --audit-reports API        where the audit's results go besides the metrics:
                             wgpolicyk8s (PolicyReports, default), openreports
                             (openreports.io Reports) or none
  --audit-lease NS/NAME      the Lease that picks the one replica writing reports
                             (default $POD_NAMESPACE, else kubegap-system, and
                             kubegap-webhook-audit)
  --threads N                I/O threads                      (default: CPU count)
  --max-body-bytes N         request body limit               (default 8388608)
  --memory-budget BYTES      memory that requests in flight may be charged (a
                             body costs about 20x its size while parsed); over
                             it, a request is answered 503 with Retry-After
                             before its body is read (default: the container's
                             memory limit less 64 MiB, 1 GiB without a limit;
                             never less than one request of --max-body-bytes)
  --max-connections N        open connections; within N/64 of it, each new
                             connection closes the longest-idle one (default 4096)
  --first-request-timeout S  seconds after the TLS handshake by which the first
                             request's header must arrive (default 5)
  --shutdown-timeout SECS    drain bound on SIGTERM/SIGINT    (default 25)
  --reload-interval SECS     how often the certificate and policy files are
                             checked for changes (rotation, ConfigMap update;
                             default 2)
  --log-level LEVEL          trace|debug|info|warn|error|off  (default info)
  --log-format FORMAT        text|json                        (default text)
)";

constexpr const char* kCheckHelp = R"(Usage: kubegap-webhook check [flags] PATH...

Finds the same gaps as the webhook in manifests, before they reach a cluster.
PATH is a file, a directory (recursively *.yaml, *.yml, *.json) or - for stdin. Multi-
document YAML, JSON, List kinds and AdmissionReview files are read. PodDisruptionBudgets
and Nodes in the input form the cluster view; without any, disruption-budget is
reported "not evaluated".

Flags:
  -p, --policy FILE     policy YAML overriding the built-in defaults
  -o, --output FORMAT   text (default), json, or sarif (SARIF 2.1.0, for code scanning)
  --fail-on-findings    exit 1 when there is a finding
  --explain             text: under each object, the class of each part (training,
                        serving, auto, diagnostic) and the rule or hint that decided it
  --show-skipped        text: list each object of a kind kubegap does not evaluate
                        (default: one line counting them by kind)
  --color WHEN          auto (default: colour on a terminal, never with NO_COLOR),
                        always or never

Files that cannot be read (invalid YAML, no apiVersion/kind, a field of the wrong type,
a quantity such as "$GPUS") are listed on stderr as FILE:LINE: MESSAGE, and in the json
(`errors`) and sarif (invocations) outputs; every other object is still checked.
kustomization.yaml, Chart.yaml, values*.yaml and unrendered chart templates are
skipped with a note.

Exit codes: 0 no findings (or findings without --fail-on-findings), 1 findings with
--fail-on-findings, 2 usage or input errors (after the report; input errors win over 1).
)";

constexpr const char* kScanHelp = R"(Usage: kubegap-webhook scan [flags]

Finds the same gaps as the webhook in what already runs: lists, page by page, every
kind of the workload table that the API server serves (a CRD that is not installed is
skipped) and Pods, and evaluates them with the live PodDisruptionBudgets and Nodes. An
object whose controller was evaluated too (a workload's Pods, ReplicaSets, Jobs) is
reported under that controller only. Needs get/list on those kinds, PDBs and Nodes.

Flags:
  --kubeconfig FILE     the API server and credentials (default: in a pod, its service
                        account; else $KUBECONFIG, then ~/.kube/config)
  -n, --namespace NS    one namespace (default: every namespace)
  -p, --policy FILE     policy YAML overriding the built-in defaults
  -o, --output FORMAT   text (default), json, or sarif
  --page-size N         objects per list request (default 250)
  --fail-on-findings    exit 1 when there is a finding
  --explain             text: the class of each part and why
  --color WHEN          auto (default), always or never

Resources that cannot be listed (forbidden, an error) are listed on stderr and in the
json/sarif outputs; the rest is still scanned. Exit codes as check: 0, 1 findings with
--fail-on-findings, 2 usage errors or resources that could not be listed.
)";

constexpr const char* kExportHelp = R"(Usage: kubegap-webhook export vap [--policy FILE] [--checks LIST]

Prints (YAML, ready for kubectl apply -f -) ValidatingAdmissionPolicies and their
bindings (admissionregistration.k8s.io/v1, validationActions [Warn, Audit],
failurePolicy Ignore) that run the spec-only checks in the API server itself, in CEL,
without the webhook: one policy per kind of the workload table, generated from the
policy in force: checkpoint-volume, zone-spread (without the cluster view) and
gpu-health-tolerations; disruption-budget needs the cluster's PDBs. The README's
"Webhook or ValidatingAdmissionPolicy?" says what differs from the webhook.

Flags:
  -p, --policy FILE   policy YAML overriding the built-in defaults
  --checks LIST       comma-separated check ids (default: every check with a CEL form)
)";

constexpr const char* kCompletionHelp = R"(Usage: kubegap-webhook completion bash|zsh

Prints a shell completion script (commands, flags, their values, case and check ids).

  source <(kubegap-webhook completion bash)                      # this bash session
  kubegap-webhook completion bash > /usr/share/bash-completion/completions/kubegap-webhook
  kubegap-webhook completion zsh > "${fpath[1]}/_kubegap-webhook"  # zsh, then compinit
)";

constexpr const char* kCasesHelp = R"(Usage: kubegap-webhook cases [ID] [--output text|json]

Without ID: for each check, its fix and the public incident cases it cites, in the
order it cites them (a warning prints the first), each with the one-line reason it
backs the check. With a case id: that case in full (what its sources say, each figure
with its URL, kept apart from our reading of it). With a check id: that check only.
)";

// The commands and their flags: the parsers' known flags and the shell completion both
// come from this table.
std::vector<CompletionCommand> command_table() {
  using V = CompletionFlag::Value;
  std::vector<std::string> ids;
  for (const auto& check : check_registry()) ids.emplace_back(check.id);
  for (const auto& c : case_library().cases()) ids.push_back(c.id);
  std::vector<CompletionCommand> table = {
      {"serve", "serve the webhook",
       {{"--tls-cert", "", "serving certificate chain (PEM)", V::kFile, {}},
        {"--tls-key", "", "its private key (PEM)", V::kFile, {}},
        {"--client-ca", "", "CA bundle a client certificate must chain to", V::kFile, {}},
        {"--listen", "", "HTTPS address HOST:PORT", V::kAny, {}},
        {"--health-listen", "", "health and metrics address HOST:PORT", V::kAny, {}},
        {"--policy", "-p", "policy YAML", V::kFile, {}},
        {"--cluster-state", "", "PodDisruptionBudgets and Nodes from a file", V::kFile, {}},
        {"--kubeconfig", "", "watch the cluster view through this kubeconfig", V::kFile, {}},
        {"--cluster-sync-timeout", "", "seconds to wait for the cluster view", V::kAny, {}},
        {"--audit-interval", "", "seconds between background audits (0: off)", V::kAny, {}},
        {"--audit-reports", "", "where audit results go", V::kWords, {"wgpolicyk8s", "openreports", "none"}},
        {"--audit-lease", "", "NAMESPACE/NAME of the audit Lease", V::kAny, {}},
        {"--threads", "", "I/O threads", V::kAny, {}},
        {"--max-body-bytes", "", "request body limit", V::kAny, {}},
        {"--memory-budget", "", "bytes requests in flight may be charged", V::kAny, {}},
        {"--max-connections", "", "open connection cap", V::kAny, {}},
        {"--first-request-timeout", "", "seconds to the first request after the handshake", V::kAny, {}},
        {"--shutdown-timeout", "", "drain bound in seconds", V::kAny, {}},
        {"--reload-interval", "", "seconds between file checks", V::kAny, {}},
        {"--log-level", "", "log level", V::kWords, {"trace", "debug", "info", "warn", "error", "off"}},
        {"--log-format", "", "log format", V::kWords, {"text", "json"}}},
       {},
       false},
      {"check", "check manifests offline",
       {{"--policy", "-p", "policy YAML", V::kFile, {}},
        {"--output", "-o", "report format", V::kWords, {"text", "json", "sarif"}},
        {"--color", "", "colour", V::kWords, {"auto", "always", "never"}},
        {"--fail-on-findings", "", "exit 1 when there is a finding", V::kNone, {}},
        {"--explain", "", "the class of each part and why", V::kNone, {}},
        {"--show-skipped", "", "list each skipped object", V::kNone, {}}},
       {},
       true},
      {"scan", "check what runs in a cluster",
       {{"--kubeconfig", "", "kubeconfig of the cluster", V::kFile, {}},
        {"--namespace", "-n", "one namespace", V::kAny, {}},
        {"--policy", "-p", "policy YAML", V::kFile, {}},
        {"--output", "-o", "report format", V::kWords, {"text", "json", "sarif"}},
        {"--page-size", "", "objects per list request", V::kAny, {}},
        {"--color", "", "colour", V::kWords, {"auto", "always", "never"}},
        {"--fail-on-findings", "", "exit 1 when there is a finding", V::kNone, {}},
        {"--explain", "", "the class of each part and why", V::kNone, {}}},
       {},
       false},
      {"export", "the checks in another form",
       {{"--policy", "-p", "policy YAML", V::kFile, {}},
        {"--checks", "", "comma-separated check ids", V::kAny, {}}},
       {"vap"},
       false},
      {"cases", "the cases behind each check",
       {{"--output", "-o", "format", V::kWords, {"text", "json"}}},
       ids,
       false},
      {"completion", "print a shell completion script", {}, {"bash", "zsh"}, false},
      {"version", "print the version", {}, {}, false},
  };
  std::vector<std::string> names;
  for (const auto& c : table) names.push_back(c.name);
  table.push_back({"help", "help for a command", {}, names, false});
  return table;
}

// known_flags: the flags of `command` that take a value, without their dashes (what
// FlagParser parses; switches are taken out before it).
std::vector<std::string> known_flags(std::string_view command) {
  for (const auto& c : command_table()) {
    if (c.name != command) continue;
    std::vector<std::string> out;
    for (const auto& f : c.flags) {
      if (f.value != CompletionFlag::Value::kNone) out.push_back(f.name.substr(2));
    }
    return out;
  }
  return {};
}

struct UsageError {
  std::string message;
};

// FlagParser: "--name value" and "--name=value"; every flag known up front.
class FlagParser {
 public:
  FlagParser(const std::vector<std::string>& args, std::vector<std::string> known)
      : known_(std::move(known)) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if (arg == "--help" || arg == "-h") {
        help_ = true;
        continue;
      }
      if (arg.rfind("--", 0) != 0) throw UsageError{"unexpected argument \"" + arg + "\""};
      std::string name = arg.substr(2);
      std::optional<std::string> value;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      if (std::find(known_.begin(), known_.end(), name) == known_.end()) {
        throw UsageError{"unknown flag --" + name};
      }
      if (!value) {
        if (i + 1 >= args.size()) throw UsageError{"flag --" + name + " needs a value"};
        value = args[++i];
      }
      values_[name] = *value;
    }
  }

  bool help() const { return help_; }
  std::optional<std::string> get(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional(it->second);
  }
  std::string get_or(const std::string& name, std::string fallback) const {
    return get(name).value_or(std::move(fallback));
  }
  std::string required(const std::string& name) const {
    auto value = get(name);
    if (!value || value->empty()) throw UsageError{"flag --" + name + " is required"};
    return *value;
  }
  long long integer(const std::string& name, long long fallback, long long min, long long max) const {
    const auto text = get(name);
    if (!text) return fallback;
    long long value = 0;
    const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || ptr != text->data() + text->size() || value < min || value > max) {
      throw UsageError{"flag --" + name + ": \"" + *text + "\" is not an integer in [" +
                       std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    return value;
  }

 private:
  std::vector<std::string> known_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

net::ip::tcp::endpoint parse_endpoint(const std::string& flag, const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw UsageError{"flag --" + flag + ": expected HOST:PORT, got \"" + text + "\""};
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "localhost") host = host.empty() ? "0.0.0.0" : "127.0.0.1";
  unsigned port = 0;
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535) {
    throw UsageError{"flag --" + flag + ": \"" + port_text + "\" is not a port number"};
  }
  boost::system::error_code bad_address;
  const auto address = net::ip::make_address(host, bad_address);
  if (bad_address) throw UsageError{"flag --" + flag + ": \"" + host + "\" is not an IP address"};
  return {address, static_cast<unsigned short>(port)};
}

// verify_case_citations: every case a check cites must be in the library (fail at start,
// not in a warning).
void verify_case_citations() {
  const CaseLibrary& library = case_library();
  for (const auto& check : check_registry()) {
    for (const auto& id : check.cases) {
      if (library.find(id) == nullptr) {
        throw ConfigError("check " + std::string(check.id) + " cites unknown case " + id);
      }
    }
  }
}

net::awaitable<void> wait_for_sync(const ClusterWatcher& watcher, ReadinessState& readiness,
                                   std::chrono::seconds timeout) {
  net::steady_timer timer(co_await net::this_coro::executor);
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!watcher.synced() && std::chrono::steady_clock::now() < until) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(net::use_awaitable);
  }
  if (!watcher.synced()) {
    log_event(spdlog::level::warn, "cluster view not synced in time; ready without it",
              {{"timeout_s", std::to_string(timeout.count()), false}});
  }
  readiness.mark_ready();
}

// audit_options_from: --audit-interval, --audit-reports and --audit-lease.
AuditOptions audit_options_from(const FlagParser& flags) {
  AuditOptions options;
  options.interval = std::chrono::seconds(flags.integer("audit-interval", 600, 0, 7 * 24 * 3600));
  const std::string reports = flags.get_or("audit-reports", "wgpolicyk8s");
  if (reports == "none") {
    options.write_reports = false;
  } else if (reports == "openreports") {
    options.flavour = ReportFlavour::kOpenReports;
  } else if (reports != "wgpolicyk8s") {
    throw UsageError{"flag --audit-reports: expected wgpolicyk8s, openreports or none, got \"" + reports + "\""};
  }
  const char* pod_namespace = std::getenv("POD_NAMESPACE");
  if (pod_namespace != nullptr && *pod_namespace != '\0') options.lease_namespace = pod_namespace;
  if (const auto lease = flags.get("audit-lease")) {
    const auto slash = lease->find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == lease->size()) {
      throw UsageError{"flag --audit-lease: expected NAMESPACE/NAME, got \"" + *lease + "\""};
    }
    options.lease_namespace = lease->substr(0, slash);
    options.lease_name = lease->substr(slash + 1);
  }
  return options;
}

int serve(const std::vector<std::string>& args) {
  const FlagParser flags(args, known_flags("serve"));
  if (flags.help()) {
    std::cout << with_name(kServeHelp);
    return kExitOk;
  }
  const std::string cert = flags.required("tls-cert");
  const std::string key = flags.required("tls-key");
  ServerOptions options;
  options.listen = parse_endpoint("listen", flags.get_or("listen", "0.0.0.0:8443"));
  const auto health_endpoint = parse_endpoint("health-listen", flags.get_or("health-listen", "0.0.0.0:9090"));
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<int>(flags.integer("threads", cpus, 1, 256));
  options.body_limit = static_cast<std::size_t>(flags.integer("max-body-bytes", 8 * 1024 * 1024, 1024, 1LL << 30));
  options.memory_budget = static_cast<std::size_t>(flags.integer("memory-budget", 0, 0, 1LL << 40));
  if (options.memory_budget != 0 && options.memory_budget < request_charge(options.body_limit)) {
    throw UsageError{"flag --memory-budget: " + std::to_string(options.memory_budget) +
                     " bytes cannot hold one request of --max-body-bytes " + std::to_string(options.body_limit) +
                     " (charged " + std::to_string(request_charge(options.body_limit)) +
                     "); raise it or lower --max-body-bytes"};
  }
  options.max_connections = static_cast<std::size_t>(flags.integer("max-connections", 4096, 2, 1 << 20));
  options.reserved_connections = (options.max_connections + 63) / 64;
  options.first_request_timeout = std::chrono::seconds(flags.integer("first-request-timeout", 5, 1, 3600));
  const auto shutdown_timeout = std::chrono::seconds(flags.integer("shutdown-timeout", 25, 0, 3600));
  const std::string format_text = flags.get_or("log-format", "text");
  if (format_text != "text" && format_text != "json") {
    throw UsageError{"flag --log-format: expected text or json, got \"" + format_text + "\""};
  }
  const std::string level = flags.get_or("log-level", "info");
  if (!configure_logging(level, format_text == "json" ? LogFormat::kJson : LogFormat::kText)) {
    throw UsageError{"flag --log-level: expected trace, debug, info, warn, error or off, got \"" + level + "\""};
  }

  const AuditOptions audit_options = audit_options_from(flags);  // usage errors before any file is read
  verify_case_citations();
  const auto policy_file = flags.get("policy");
  PolicyStore policies(policy_file ? load_policy_file(*policy_file) : default_policy());
  const auto sync_timeout = std::chrono::seconds(flags.integer("cluster-sync-timeout", 30, 0, 3600));
  ServerTlsStore tls(cert, key, flags.get_or("client-ca", ""));
  const auto reload_interval = std::chrono::seconds(flags.integer("reload-interval", 2, 1, 3600));

  // Two event loops: `ioc` (--threads threads) serves reviews and nothing else; `control`
  // (one thread) runs health and metrics, the cluster view and the reloaders, so a probe
  // answers while every review thread is busy, and the watcher's work (parsing events,
  // building and freeing snapshots) never lands on a review.
  net::io_context ioc(threads);
  net::io_context control(1);
  Metrics metrics;
  // The cluster view: a file when given, else the live API server when reachable
  // (--kubeconfig, or in a pod), else none ("not evaluated", never a guess).
  std::unique_ptr<ClusterView> cluster;
  ClusterWatcher* watcher = nullptr;
  std::unique_ptr<BackgroundAudit> audit;
  std::string cluster_source = "none";
  if (const auto state_file = flags.get("cluster-state")) {
    if (flags.get("kubeconfig")) throw UsageError{"use --cluster-state or --kubeconfig, not both"};
    cluster = std::make_unique<StaticClusterView>(load_cluster_state_file(*state_file));
    cluster_source = *state_file;
  } else if (auto endpoint = flags.get("kubeconfig") ? std::optional(load_kubeconfig(*flags.get("kubeconfig")))
                                                     : in_cluster_endpoint()) {
    cluster_source = "live from " + endpoint->source + " (https://" + endpoint->host + ":" + endpoint->port + ")";
    if (audit_options.interval.count() > 0) {
      audit = std::make_unique<BackgroundAudit>(*endpoint, policies, metrics, audit_options);
    }
    auto live = std::make_unique<ClusterWatcher>(control, std::move(*endpoint), metrics);
    watcher = live.get();
    metrics.cluster_view_enabled();
    cluster = std::move(live);
  } else {
    cluster = std::make_unique<NoClusterView>();
  }
  ReadinessState readiness;
  ReviewHandler handler(policies, *cluster);
  WebhookServer server(ioc, tls, handler, metrics, options);
  HealthServer health(control, readiness, metrics, health_endpoint);
  note_certificate(tls, metrics);
  // Re-check the expiry twice a day, so a certificate that nobody rotates is warned
  // about when it crosses the 30-day line, not only at start.
  net::co_spawn(
      control,
      [&]() -> net::awaitable<void> {
        net::steady_timer timer(co_await net::this_coro::executor);
        for (;;) {
          timer.expires_after(std::chrono::hours(12));
          co_await timer.async_wait(net::use_awaitable);
          note_certificate(tls, metrics);
        }
      },
      net::detached);
  auto tls_watch = watch_tls_files(control, tls, metrics, reload_interval);
  tls_watch->start();
  std::unique_ptr<FileWatcher> policy_watch;
  if (policy_file) {
    policy_watch = watch_policy_file(control, *policy_file, policies, metrics, reload_interval);
    policy_watch->start();
  }
  const auto bound = server.listen();
  const auto health_bound = health.listen();
  if (audit) audit->start();
  if (watcher == nullptr) {
    readiness.mark_ready();
  } else {
    watcher->start();
    // Ready once the view has synced, or after the timeout: a webhook that never becomes
    // ready because the API server is slow would block its own rollout.
    net::co_spawn(control, wait_for_sync(*watcher, readiness, sync_timeout), net::detached);
  }
  log_event(spdlog::level::info, "serving",
            {{"version", kVersion},
             {"listen", bound.address().to_string() + ":" + std::to_string(bound.port())},
             {"health_listen", health_bound.address().to_string() + ":" + std::to_string(health_bound.port())},
             {"policy", policy_file.value_or("built-in default")},
             {"client_ca", tls.client_ca_file().empty() ? "none: any client may connect" : tls.client_ca_file()},
             {"cluster_view", cluster_source},
             {"background_audit", audit ? "every " + std::to_string(audit_options.interval.count()) + " s" : "off"},
             {"threads", std::to_string(threads), false},
             {"memory_budget", std::to_string(server.memory_budget().capacity()), false}});
  // A budget the container cannot hold (a small limit with a large --max-body-bytes, or
  // an explicit --memory-budget) defeats its purpose: say so where the operator looks.
  if (const auto limit = container_memory_limit();
      limit && server.memory_budget().capacity() + kMemoryReserve > *limit) {
    log_event(spdlog::level::warn, "memory budget does not fit the container's memory limit",
              {{"memory_budget", std::to_string(server.memory_budget().capacity()), false},
               {"limit", std::to_string(*limit), false},
               {"hint", "raise the limit to the budget plus 64 MiB, or lower --max-body-bytes / --memory-budget"}});
  }
  flush_logs();

  // The review loop keeps running until the drain ends, even with nothing to do (so a
  // signal's drain, posted to it, always runs).
  auto review_work = net::make_work_guard(ioc);
  net::signal_set signals(control, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    // A second signal during the drain stops at once.
    signals.async_wait([&](const boost::system::error_code& again, int second) {
      if (again) return;
      log_event(spdlog::level::warn, "second signal: stopping without waiting for the drain",
                {{"signal", std::to_string(second), false}});
      flush_logs();
      ioc.stop();
      control.stop();
    });
    readiness.mark_shutting_down();
    log_event(spdlog::level::info, "shutting down", {{"signal", std::to_string(signal), false}});
    flush_logs();
    if (watcher != nullptr) watcher->stop();
    tls_watch->stop();
    if (policy_watch) policy_watch->stop();
    // The drain runs on the review loop; health keeps answering (not ready) meanwhile.
    net::post(ioc, [&] {
      server.shutdown(shutdown_timeout, [&] {
        net::post(control, [&] {
          health.stop();
          log_event(spdlog::level::info, "stopped", {{"open_connections", std::to_string(server.connections()), false}});
          flush_logs();
          review_work.reset();
          ioc.stop();
          control.stop();
        });
      });
    });
  });

  // A failure escaping either loop stops both, so no thread is left waiting on the other.
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto run_loop = [&](net::io_context& loop) {
    try {
      loop.run();
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      ioc.stop();
      control.stop();
    }
  };
  std::thread control_thread([&] { run_loop(control); });
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) workers.emplace_back([&] { run_loop(ioc); });
  run_loop(ioc);
  for (auto& worker : workers) worker.join();
  control_thread.join();
  // After the drain: a run in progress stops at its next page, and the Lease is released
  // so another replica takes the audit over at once.
  if (audit) audit->stop();
  if (failure) std::rethrow_exception(failure);
  spdlog::default_logger()->flush();
  return kExitOk;
}

// use_colour: --color always|never|auto; auto is a terminal on stdout and no NO_COLOR
// (https://no-color.org), so colour codes never land in a file or a pipe.
bool use_colour(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (mode != "auto") throw UsageError{"flag --color: expected auto, always or never, got \"" + mode + "\""};
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || *no_color == '\0');
}

// report_format: --output for check and scan.
std::string report_format(const FlagParser& flags) {
  std::string output = flags.get_or("output", "text");
  if (output != "text" && output != "json" && output != "sarif") {
    throw UsageError{"flag --output: expected text, json or sarif, got \"" + output + "\""};
  }
  return output;
}

// emit_report: the report on stdout, then every input error on stderr; the exit code
// (input errors win over findings).
int emit_report(const CheckReport& report, const std::string& output, const TextOptions& text, const char* command,
                bool fail_on_findings) {
  std::cout << (output == "json" ? render_json(report) : output == "sarif" ? render_sarif(report) : render_text(report, text));
  std::cout.flush();
  for (const auto& e : report.errors) std::cerr << "kubegap-webhook " << command << ": " << e.text() << "\n";
  if (!report.errors.empty()) return kExitUsage;
  return fail_on_findings && report.finding_count() > 0 ? kExitError : kExitOk;
}

int check(const std::vector<std::string>& args) {
  // Flags without a value; every other "--flag" takes the next argument (or =value).
  const std::vector<std::string> switches = {"--fail-on-findings", "--explain", "--show-skipped", "--help", "-h"};
  const auto is_switch = [&](const std::string& arg) {
    return std::find(switches.begin(), switches.end(), arg) != switches.end();
  };
  std::vector<std::string> paths;
  std::vector<std::string> flag_args;
  std::vector<std::string> set_switches;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (is_switch(arg)) {
      (arg == "--help" || arg == "-h" ? flag_args : set_switches).push_back(arg);
    } else if (arg.rfind("--", 0) == 0) {
      flag_args.push_back(arg);
      if (arg.find('=') == std::string::npos && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      paths.push_back(arg);  // a file, a directory, or - for stdin
    }
  }
  const auto has = [&](const char* name) {
    return std::find(set_switches.begin(), set_switches.end(), name) != set_switches.end();
  };
  const FlagParser flags(flag_args, known_flags("check"));
  if (flags.help()) {
    std::cout << with_name(kCheckHelp);
    return kExitOk;
  }
  TextOptions text;
  text.explain = has("--explain");
  text.show_skipped = has("--show-skipped");
  text.colour = use_colour(flags.get_or("color", "auto"));
  const bool fail_on_findings = has("--fail-on-findings");
  const std::string output = report_format(flags);
  if (paths.empty()) throw UsageError{"check needs at least one PATH (a file, a directory, or - for stdin)"};
  const auto policy_file = flags.get("policy");
  CheckReport report;
  try {
    const Policy policy = policy_file ? load_policy_file(*policy_file) : default_policy();
    report = check_paths(paths, policy);
  } catch (const ConfigError& e) {  // a bad --policy: nothing can be checked
    std::cerr << "kubegap-webhook check: " << e.what() << "\n";
    return kExitUsage;
  }
  // The report first, whatever could not be read: then every input error, and exit 2.
  return emit_report(report, output, text, "check", fail_on_findings);
}

// scan_endpoint: --kubeconfig, else the pod's service account, else $KUBECONFIG's first
// file, else ~/.kube/config (kubectl's order, in-cluster first as client-go's).
KubeEndpoint scan_endpoint(const std::optional<std::string>& kubeconfig) {
  if (kubeconfig) return load_kubeconfig(*kubeconfig);
  if (auto in_cluster = in_cluster_endpoint()) return *in_cluster;
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    const std::string list = env;
    return load_kubeconfig(list.substr(0, list.find(':')));
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return load_kubeconfig(std::string(home) + "/.kube/config");
  }
  throw ConfigError("scan: no cluster: not in a pod, no --kubeconfig, $KUBECONFIG or ~/.kube/config");
}

int scan(const std::vector<std::string>& args) {
  std::vector<std::string> flag_args;
  std::vector<std::string> set_switches;
  for (const auto& arg : args) {
    (arg == "--fail-on-findings" || arg == "--explain" ? set_switches : flag_args).push_back(arg);
  }
  const auto has = [&](const char* name) {
    return std::find(set_switches.begin(), set_switches.end(), name) != set_switches.end();
  };
  const FlagParser flags(flag_args, known_flags("scan"));
  if (flags.help()) {
    std::cout << with_name(kScanHelp);
    return kExitOk;
  }
  TextOptions text;
  text.explain = has("--explain");
  text.colour = use_colour(flags.get_or("color", "auto"));
  const std::string output = report_format(flags);
  ScanOptions options;
  options.namespace_name = flags.get_or("namespace", "");
  options.page_size = static_cast<std::size_t>(flags.integer("page-size", 250, 1, 10000));
  const auto policy_file = flags.get("policy");
  Policy policy;
  KubeEndpoint endpoint;
  try {
    policy = policy_file ? load_policy_file(*policy_file) : default_policy();
    endpoint = scan_endpoint(flags.get("kubeconfig"));
  } catch (const ConfigError& e) {
    std::cerr << "kubegap-webhook scan: " << e.what() << "\n";
    return kExitUsage;
  }
  return emit_report(scan_cluster(endpoint, options, policy), output, text, "scan", has("--fail-on-findings"));
}

int export_command(const std::vector<std::string>& args) {
  std::vector<std::string> rest = args;
  const bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                    std::find(rest.begin(), rest.end(), "-h") != rest.end();
  if (help) {
    std::cout << with_name(kExportHelp);
    return kExitOk;
  }
  if (rest.empty() || rest.front() != "vap") {
    throw UsageError{"export needs a form: vap (export vap [--policy FILE] [--checks LIST])"};
  }
  rest.erase(rest.begin());
  const FlagParser flags(rest, known_flags("export"));
  std::vector<std::string> checks = kVapChecks;
  if (const auto list = flags.get("checks")) {
    checks.clear();
    std::string item;
    for (std::size_t at = 0; at <= list->size(); ++at) {
      if (at == list->size() || (*list)[at] == ',') {
        if (!item.empty()) checks.push_back(item);
        item.clear();
      } else if ((*list)[at] != ' ') {
        item += (*list)[at];
      }
    }
    if (checks.empty()) throw UsageError{"flag --checks: no check ids in \"" + *list + "\""};
  }
  const auto policy_file = flags.get("policy");
  try {
    const Policy policy = policy_file ? load_policy_file(*policy_file) : default_policy();
    std::cout << export_vap(policy, checks);
  } catch (const ConfigError& e) {
    std::cerr << "kubegap-webhook export: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

int cases(const std::vector<std::string>& args) {
  // `cases [ID]`: an optional case or check id before the flags.
  std::string id;
  std::vector<std::string> rest = args;
  if (!rest.empty() && rest.front().rfind("-", 0) != 0) {
    id = rest.front();
    rest.erase(rest.begin());
  }
  const FlagParser flags(rest, known_flags("cases"));
  if (flags.help()) {
    std::cout << with_name(kCasesHelp);
    return kExitOk;
  }
  const std::string output = flags.get_or("output", "text");
  if (output != "text" && output != "json") {
    throw UsageError{"flag --output: expected text or json, got \"" + output + "\""};
  }
  const CaseLibrary& library = case_library();
  if (id.empty()) {
    std::cout << (output == "json" ? cases_as_json(library) : cases_by_check_text(library));
  } else if (const Case* found = library.find(id)) {
    std::cout << (output == "json" ? case_as_json(*found) : case_as_text(*found));
  } else if (find_check(id) != nullptr) {
    std::cout << (output == "json" ? cases_as_json(library, id) : cases_by_check_text(library, id));
  } else {
    std::string known;
    for (const auto& check : check_registry()) known += (known.empty() ? "" : ", ") + std::string(check.id);
    for (const auto& c : library.cases()) known += ", " + c.id;
    throw UsageError{"no case or check \"" + id + "\" (known: " + known + ")"};
  }
  return kExitOk;
}

int completion(const std::vector<std::string>& args) {
  if (!args.empty() && (args.front() == "--help" || args.front() == "-h")) {
    std::cout << with_name(kCompletionHelp);
    return kExitOk;
  }
  if (args.size() != 1) throw UsageError{"completion needs one shell: bash or zsh"};
  const std::string script = completion_script(args.front(), "kubegap-webhook", command_table());
  if (script.empty()) throw UsageError{"completion: no script for \"" + args.front() + "\" (bash or zsh)"};
  std::cout << script;
  return kExitOk;
}

int version(const std::vector<std::string>& args) {
  const FlagParser flags(args, {});
  if (flags.help()) {
    std::cout << "Usage: kubegap-webhook version\n\nPrints the version.\n";
    return kExitOk;
  }
  std::cout << "kubegap-webhook " << kVersion << "\n";
  return kExitOk;
}

// expand_short_flags: kubectl's short flags, -o (also -ojson) for --output and -p for
// --policy, as their long forms.
std::vector<std::string> expand_short_flags(std::vector<std::string> args) {
  for (auto& arg : args) {
    if (arg == "-o") {
      arg = "--output";
    } else if (arg == "-p") {
      arg = "--policy";
    } else if (arg == "-n") {
      arg = "--namespace";
    } else if (arg.size() > 2 && arg.rfind("-o", 0) == 0 && arg[2] != '-') {
      arg = "--output=" + arg.substr(arg[2] == '=' ? 3 : 2);
    }
  }
  return args;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::string_view program) {
  const auto slash = program.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? program : program.substr(slash + 1);
  if (base.starts_with("kubectl-")) {
    // kubectl-kubegap -> "kubectl kubegap" (kubectl's plugin naming: dashes are spaces).
    std::string name = "kubectl " + std::string(base.substr(8));
    std::replace(name.begin() + 8, name.end(), '-', ' ');
    g_display_name = name;
  }
  if (args.empty()) {
    std::cerr << with_name(kMainHelp);
    return kExitUsage;
  }
  std::string command = args.front();
  std::vector<std::string> rest = expand_short_flags({args.begin() + 1, args.end()});
  if (command == "help" && !rest.empty()) {  // `help check` is `check --help`
    command = rest.front();
    rest = {"--help"};
  }
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << with_name(kMainHelp);
      return kExitOk;
    }
    if (command == "serve") return serve(rest);
    if (command == "cases") return cases(rest);
    if (command == "check") return check(rest);
    if (command == "scan") return scan(rest);
    if (command == "export") return export_command(rest);
    if (command == "completion") return completion(rest);
    if (command == "version" || command == "--version") return version(rest);
    throw UsageError{"unknown command \"" + command + "\""};
  } catch (const UsageError& e) {
    std::cerr << g_display_name << ": " << e.message << "\nRun '" << g_display_name << " --help' for usage.\n";
    return kExitUsage;
  } catch (const ConfigError& e) {
    std::cerr << "kubegap-webhook: " << e.what() << "\n";
    return kExitError;
  } catch (const boost::system::system_error& e) {
    std::cerr << "kubegap-webhook: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "kubegap-webhook: unexpected error: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace kubegap
