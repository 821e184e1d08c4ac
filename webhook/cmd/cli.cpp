#include "webhook/cmd/cli.h"

#include <unistd.h>

#include <boost/system/system_error.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "policies/checks.h"
#include "webhook/cmd/commands.h"
#include "webhook/cmd/completion.h"
#include "webhook/cmd/flags.h"
#include "webhook/cmd/serve_app.h"
#include "webhook/cmd/serve_config.h"
#include "webhook/core/build_info.h"
#include "webhook/core/case_library.h"
#include "webhook/core/file_io.h"
#include "webhook/core/policy_loader.h"
#include "webhook/kube/kube_config.h"
#include "webhook/mcp/mcp_catalog.h"
#include "webhook/mcp/stdio_server.h"
#include "webhook/report/cluster_scan.h"
#include "webhook/report/offline_check.h"
#include "webhook/report/report_render.h"
#include "webhook/report/vap_export.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {
namespace {

// The name users typed: "kubegap-webhook", or "kubectl kubegap" when the binary runs as
// the kubectl plugin kubectl-kubegap (a symlink); help and usage say it back.
std::string g_display_name = "kubegap-webhook";

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

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

// parse: `args` against the table of `command`.
ParsedFlags parse(std::string_view command, const std::vector<std::string>& args) {
  return parse_flags(*find_command(command), args);
}

// print_help: the help of `command`, as the user calls the program.
int print_help(std::string_view command) {
  std::cout << render_help(*find_command(command), g_display_name);
  return kExitOk;
}

int serve(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("serve", args);
  if (flags.help()) return print_help("serve");
  const ServeConfig config = serve_config_from(flags);  // usage errors before any file is read
  configure_logging(config.log_level, config.log_format);
  verify_case_citations();
  ServeApp app(config);
  return app.run();
}

// use_colour: --color always|never|auto; auto is a terminal on stdout and no NO_COLOR
// (https://no-color.org), so colour codes never land in a file or a pipe.
bool use_colour(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || *no_color == '\0');
}

// emit_report: the report on stdout, then every input error on stderr; the exit code
// (input errors win over findings).
int emit_report(const CheckReport& report, const std::string& output, const TextOptions& text, const char* command,
                bool fail_on_findings) {
  std::cout << (output == "json"    ? render_json(report)
                : output == "sarif" ? render_sarif(report)
                                    : render_text(report, text));
  std::cout.flush();
  for (const auto& e : report.errors) std::cerr << "kubegap-webhook " << command << ": " << e.text() << "\n";
  if (!report.errors.empty()) return kExitUsage;
  return fail_on_findings && report.finding_count() > 0 ? kExitError : kExitOk;
}

int check(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("check", args);
  if (flags.help()) return print_help("check");
  TextOptions text;
  text.explain = flags.has("--explain");
  text.show_skipped = flags.has("--show-skipped");
  text.colour = use_colour(flags.value("--color"));
  const bool fail_on_findings = flags.has("--fail-on-findings");
  const std::string output = flags.value("--output");
  const std::vector<std::string>& paths = flags.arguments();  // files, directories, or - for stdin
  if (paths.empty()) throw UsageError{"check needs at least one PATH (a file, a directory, or - for stdin)"};
  const auto policy_file = flags.given("--policy");
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

int scan(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("scan", args);
  if (flags.help()) return print_help("scan");
  TextOptions text;
  text.explain = flags.has("--explain");
  text.colour = use_colour(flags.value("--color"));
  const std::string output = flags.value("--output");
  ScanOptions options;
  options.namespace_name = flags.value("--namespace");
  options.page_size = static_cast<std::size_t>(flags.integer("--page-size", 1, 10000));
  const auto policy_file = flags.given("--policy");
  Policy policy;
  KubeEndpoint endpoint;
  try {
    policy = policy_file ? load_policy_file(*policy_file) : default_policy();
    endpoint = find_endpoint(flags.given("--kubeconfig"));
    if (const auto warning = vet_tls_verification(endpoint, flags.has("--allow-insecure-kubeconfig"))) {
      std::cerr << "kubegap-webhook scan: warning: " << *warning << "\n";
    }
  } catch (const ConfigError& e) {
    std::cerr << "kubegap-webhook scan: " << e.what() << "\n";
    return kExitUsage;
  }
  return emit_report(scan_cluster(endpoint, options, policy), output, text, "scan", flags.has("--fail-on-findings"));
}

int mcp(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("mcp", args);
  if (flags.help()) return print_help("mcp");
  if (!flags.arguments().empty()) throw UsageError{"mcp takes no arguments"};
  McpOptions options;
  options.kubeconfig = flags.given("--kubeconfig");
  options.allow_insecure_kubeconfig = flags.has("--allow-insecure-kubeconfig");
  options.context = flags.value("--context");
  options.request_timeout = std::chrono::seconds(flags.integer("--request-timeout", 1, 3600));
  options.max_message_bytes =
      static_cast<std::size_t>(flags.integer("--max-message-bytes", 1024, std::int64_t{1} << 30));
  block_stop_signals();  // before any thread starts: the logger's flusher is one
  configure_logging(flags.value("--log-level"), LogFormat::kText);  // stderr: stdout is the protocol's
  verify_case_citations();
  const auto policy_file = flags.given("--policy");
  try {
    options.policy = policy_file ? load_policy_file(*policy_file) : default_policy();
    options.policy_text = policy_file ? read_file(*policy_file) : std::string(default_policy_yaml());
  } catch (const ConfigError& e) {
    std::cerr << "kubegap-webhook mcp: " << e.what() << "\n";
    return kExitUsage;
  }
  return run_stdio_server(std::move(options));
}

int export_command(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("export", args);
  if (flags.help()) return print_help("export");
  if (flags.arguments() != std::vector<std::string>{"vap"}) {
    throw UsageError{"export needs a form: vap (export vap [--policy FILE] [--checks LIST])"};
  }
  std::vector<std::string> checks = kVapChecks;
  if (const auto list = flags.given("--checks")) {
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
  const auto policy_file = flags.given("--policy");
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
  const ParsedFlags flags = parse("cases", args);
  if (flags.help()) return print_help("cases");
  if (flags.arguments().size() > 1) throw UsageError{"cases takes at most one ID"};
  const std::string id = flags.arguments().empty() ? std::string() : flags.arguments().front();
  const std::string output = flags.value("--output");
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
  const ParsedFlags flags = parse("completion", args);
  if (flags.help()) return print_help("completion");
  if (flags.arguments().size() != 1) throw UsageError{"completion needs one shell: bash or zsh"};
  std::vector<CompletionCommand> commands;
  for (const auto& spec : command_specs()) commands.push_back(to_completion(spec));
  const std::string script = completion_script(flags.arguments().front(), "kubegap-webhook", commands);
  if (script.empty()) throw UsageError{"completion: no script for \"" + flags.arguments().front() + "\" (bash or zsh)"};
  std::cout << script;
  return kExitOk;
}

int version(const std::vector<std::string>& args) {
  if (parse("version", args).help()) return print_help("version");
  std::cout << "kubegap-webhook " << kVersion << "\n";
  return kExitOk;
}

// help: `help` alone is --help; `help COMMAND` is COMMAND --help; `help --flag-reference`
// prints the flag tables of docs/cli.md.
int help(const std::vector<std::string>& args) {
  const ParsedFlags flags = parse("help", args);
  if (flags.has("--flag-reference")) {
    std::cout << render_flag_reference(command_specs());
    return kExitOk;
  }
  if (flags.help()) return print_help("help");
  if (flags.arguments().empty()) {
    std::cout << with_program_name(main_help(), g_display_name);
    return kExitOk;
  }
  const std::string& command = flags.arguments().front();
  if (find_command(command) == nullptr) throw UsageError{"unknown command \"" + command + "\""};
  return print_help(command);
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
    std::cerr << with_program_name(main_help(), g_display_name);
    return kExitUsage;
  }
  const std::string& command = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "--help" || command == "-h") return help({});
    if (command == "help") return help(rest);
    if (command == "serve") return serve(rest);
    if (command == "cases") return cases(rest);
    if (command == "check") return check(rest);
    if (command == "scan") return scan(rest);
    if (command == "mcp") return mcp(rest);
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
