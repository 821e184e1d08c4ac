#include "webhook/mcp/mcp_tools.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "policies/checks.h"
#include "webhook/core/case_library.h"
#include "webhook/core/errors.h"
#include "webhook/mcp/json_rpc.h"
#include "webhook/report/cluster_scan.h"
#include "webhook/report/report_render.h"

namespace kubegap {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

ToolResult failure(std::string text) { return ToolResult{true, std::move(text), {}}; }

std::string string_arg(const rapidjson::Value& arguments, const char* name) {
  const auto found = arguments.FindMember(name);
  return found != arguments.MemberEnd() && found->value.IsString()
             ? std::string(found->value.GetString(), found->value.GetStringLength())
             : std::string();
}

std::vector<std::string> list_arg(const rapidjson::Value& arguments, const char* name) {
  std::vector<std::string> out;
  const auto found = arguments.FindMember(name);
  if (found == arguments.MemberEnd() || !found->value.IsArray()) return out;
  for (const auto& item : found->value.GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  return d;
}

// count_line: "3 objects, 5 findings (checkpoint-volume 2, zone-spread 3), 1 input error".
std::string count_line(const CheckReport& report) {
  std::map<std::string, std::size_t> by_check;
  for (const auto& o : report.objects) {
    for (const auto& f : o.findings) {
      if (f.outcome == Outcome::kFinding) ++by_check[std::string(f.check)];
    }
  }
  std::string out =
      std::to_string(report.objects.size()) + " objects, " + std::to_string(report.finding_count()) + " findings";
  if (!by_check.empty()) {
    out += " (";
    bool first = true;
    for (const auto& [check, n] : by_check) {
      out += (first ? "" : ", ") + check + " " + std::to_string(n);
      first = false;
    }
    out += ")";
  }
  if (!report.errors.empty()) out += ", " + std::to_string(report.errors.size()) + " input errors";
  return out;
}

// limit_arg: the `limit` argument (the inputSchema bounds it), 200 by default: an agent
// reads the whole result, so a large report is cut and says what it left out.
std::size_t limit_arg(const rapidjson::Value& arguments) {
  const auto found = arguments.FindMember("limit");
  return found != arguments.MemberEnd() && found->value.IsNumber() ? static_cast<std::size_t>(found->value.GetDouble())
                                                                   : 200;
}

// cut_note: what the text says when the result is cut.
std::string cut_note(const CheckReport& report, std::size_t limit) {
  return report.objects.size() > limit ? "; the first " + std::to_string(limit) + " objects are listed (limit)" : "";
}

// resolved: `path` as the tool reads it: relative to the first of the client's roots when
// the client has roots (its workspace), else as given (the server's working directory).
std::string resolved(const std::string& path, const ToolContext& context) {
  if (context.relative_to.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(context.relative_to) / path).string();
}

ToolResult check_manifests(const rapidjson::Value& arguments, const ToolContext& context) {
  const auto inline_text = arguments.FindMember("manifests");
  std::vector<std::string> paths;
  for (const auto& path : list_arg(arguments, "paths")) paths.push_back(resolved(path, context));
  if (inline_text == arguments.MemberEnd() && paths.empty()) {
    return failure("check_manifests needs `manifests` (YAML or JSON text) or `paths` (files or folders)");
  }
  if (const std::string outside = outside_roots(paths, context.roots); !outside.empty()) {
    std::string roots;
    for (const auto& r : context.roots) roots += (roots.empty() ? "" : ", ") + r;
    return failure("path \"" + outside + "\" is outside the roots this server may read (" + roots +
                   "): give a path under one of them, or pass the manifests inline");
  }
  std::string text;
  if (inline_text != arguments.MemberEnd()) {
    text.assign(inline_text->value.GetString(), inline_text->value.GetStringLength());
    paths.insert(paths.begin(), "-");
  }
  // Every file a folder holds is checked again: a symbolic link may lead out of the roots.
  const CheckSource source{&text,
                           [&](const std::string& file) { return outside_roots({file}, context.roots).empty(); }};
  const CheckReport report = check_paths(paths, context.policy, source);
  const std::size_t limit = limit_arg(arguments);
  return ToolResult{
      false, "checked: " + count_line(report) + cut_note(report, limit) + ". Each finding has its fix in `remedy`.",
      render_json_compact(report, limit)};
}

std::string cluster_name(const KubeEndpoint& endpoint) {
  return "https://" + endpoint.host + ":" + endpoint.port + " (" + endpoint.source + ")";
}

struct ClusterScan {
  std::optional<CheckReport> report;
  std::string error;  // why there is no report to give
};

// scan: the cluster of `context_name`, cancelled by the client or at the timeout.
ClusterScan scan(const ToolContext& context, const std::string& context_name, ScanOptions options) {
  KubeEndpoint endpoint;
  try {
    endpoint = context.endpoint(context_name);
  } catch (const ConfigError& e) {
    return {std::nullopt, std::string(e.what()) +
                              ": give the server a kubeconfig (--kubeconfig FILE or $KUBECONFIG) whose context "
                              "reaches the cluster"};
  }
  const auto deadline = Clock::now() + context.timeout;
  options.cancelled = [&] { return (context.cancelled && context.cancelled()) || Clock::now() >= deadline; };
  CheckReport report;
  try {
    report = scan_cluster(endpoint, options, context.policy);
  } catch (const ConfigError& e) {
    return {std::nullopt, std::string(e.what())};
  }
  if (Clock::now() >= deadline) {
    return {std::nullopt, "the scan of " + cluster_name(endpoint) + " did not finish within " +
                              std::to_string(context.timeout.count()) +
                              " s (--request-timeout): the API server is slow or does not answer; try a "
                              "namespace or fewer kinds"};
  }
  // Nothing could be listed: the cluster did not answer, or refused these credentials.
  const auto discovery = std::find_if(report.errors.begin(), report.errors.end(),
                                      [](const InputProblem& e) { return e.file == "discovery"; });
  if (report.objects.empty() && discovery != report.errors.end()) {
    return {std::nullopt, "cannot list the cluster at " + cluster_name(endpoint) + ": " + discovery->message +
                              ". Check that the cluster is up and that the kubeconfig context is the right one "
                              "(kubectl get --raw /version with the same kubeconfig)"};
  }
  return {std::move(report), {}};
}

ToolResult scan_tool(const rapidjson::Value& arguments, const ToolContext& context) {
  ScanOptions options;
  options.namespace_name = string_arg(arguments, "namespace");
  options.kinds = list_arg(arguments, "kinds");
  const std::size_t limit = limit_arg(arguments);
  ClusterScan result = scan(context, string_arg(arguments, "context"), std::move(options));
  if (!result.report) return failure(result.error);
  const CheckReport& report = *result.report;
  std::string text = "scanned: " + count_line(report) + cut_note(report, limit);
  for (const auto& e : report.errors) text += "\nerror: " + e.text();
  return ToolResult{false, text, render_json_compact(report, limit)};
}

ToolResult explain_tool(const rapidjson::Value& arguments, const ToolContext& context) {
  const auto inline_text = arguments.FindMember("manifests");
  const std::string kind = string_arg(arguments, "kind"), name = string_arg(arguments, "name");
  CheckReport report;
  if (inline_text != arguments.MemberEnd()) {
    const std::string text(inline_text->value.GetString(), inline_text->value.GetStringLength());
    report = check_paths({"-"}, context.policy, CheckSource{&text, {}});
  } else if (!kind.empty() && !name.empty()) {
    std::string ns = string_arg(arguments, "namespace");
    if (ns.empty()) ns = "default";
    ScanOptions options;
    options.namespace_name = ns;
    options.kinds = {kind};
    ClusterScan result = scan(context, string_arg(arguments, "context"), std::move(options));
    if (!result.report) return failure(result.error);
    report = std::move(*result.report);
    std::erase_if(report.objects, [&](const CheckedObject& o) { return o.name != name; });
    if (report.objects.empty()) {
      return failure("no " + kind + " named \"" + name + "\" in namespace \"" + ns +
                     "\" (or kubegap does not evaluate it: check the kind and the namespace)");
    }
  } else {
    return failure("explain needs `manifests`, or `kind` and `name` of an object in the cluster");
  }
  TextOptions text_options;
  text_options.explain = true;
  const std::string text = render_text(report, text_options);
  return ToolResult{false, text, explain_result_json(report, text)};
}

ToolResult list_checks(const ToolContext&) {
  std::string text;
  for (const auto& check : check_registry()) {
    text += std::string(check.id) + ": " + std::string(check.summary) + "\n";
  }
  return ToolResult{false, text, to_json(parse(cases_as_json(case_library())))};
}

ToolResult get_case(const rapidjson::Value& arguments) {
  const std::string id = string_arg(arguments, "id");
  const CaseLibrary& library = case_library();
  if (const Case* c = library.find(id)) {
    return ToolResult{false, c->id + ": " + c->title, to_json(parse(case_as_json(*c)))};
  }
  if (find_check(id) != nullptr) {
    return ToolResult{false, cases_by_check_text(library, id), to_json(parse(cases_as_json(library, id)))};
  }
  return failure("no case or check \"" + id + "\"");  // the inputSchema's enum keeps this from happening
}

}  // namespace

std::string outside_roots(const std::vector<std::string>& paths, const std::vector<std::string>& roots) {
  for (const auto& path : paths) {
    std::error_code ec;
    // Symbolic links resolved: a link under a root to a file elsewhere is elsewhere.
    const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
    const bool inside = !ec && std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
      const fs::path relative = resolved.lexically_relative(root);
      return !relative.empty() && *relative.begin() != "..";
    });
    if (!inside) return path;
  }
  return {};
}

std::string explain_result_json(const CheckReport& report, const std::string& text) {
  const rapidjson::Document full = parse(render_json_compact(report, report.objects.size()));
  rapidjson::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  rapidjson::Value objects(rapidjson::kArrayType);
  for (rapidjson::SizeType i = 0; i < full["objects"].Size(); ++i) {
    rapidjson::Value o(full["objects"][i], a);
    o.RemoveMember("findings");
    rapidjson::Value provenance(rapidjson::kArrayType);
    for (const auto& line : report.objects[i].provenance) provenance.PushBack(rapidjson::Value(line.c_str(), a), a);
    o.AddMember("provenance", provenance, a);
    objects.PushBack(o, a);
  }
  d.AddMember("objects", objects, a);
  d.AddMember("errors", rapidjson::Value(full["errors"], a), a);
  d.AddMember("text", rapidjson::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), a), a);
  return to_json(d);
}

ToolResult call_tool(std::string_view name, const rapidjson::Value& arguments, const ToolContext& context) {
  try {
    if (name == "check_manifests") return check_manifests(arguments, context);
    if (name == "scan_cluster") return scan_tool(arguments, context);
    if (name == "explain") return explain_tool(arguments, context);
    if (name == "list_checks") return list_checks(context);
    if (name == "get_case") return get_case(arguments);
    return failure("unknown tool \"" + std::string(name) + "\"");
  } catch (const std::exception& e) {  // never the process: the call fails, the server serves on
    return failure("internal error in " + std::string(name) + ": " + e.what());
  }
}

}  // namespace kubegap
