#include "webhook/mcp/mcp_session.h"

#include <algorithm>
#include <filesystem>

#include "webhook/core/build_info.h"
#include "webhook/kube/kube_config.h"
#include "webhook/mcp/argument_schema.h"
#include "webhook/mcp/mcp_tools.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {
namespace {

// The keys of 2026-07-28's per-request envelope (params._meta).
constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kServerInfoKey = "io.modelcontextprotocol/serverInfo";

constexpr std::string_view kInstructions =
    "kubegap finds the reliability gaps that cost ML training jobs their progress: checkpoints that die with the "
    "pod, no PodDisruptionBudget, a job pinned to one zone, GPU pods kept on failed nodes. Every tool only reads. "
    "Use check_manifests for files or YAML text, scan_cluster for what runs, explain for why a pod counts as "
    "training, get_case for the public incident behind a finding.";

std::string json_string(std::string_view text) {
  rapidjson::Value v(rapidjson::StringRef(text.data(), text.size()));
  return to_json(v);
}

std::string server_info() {
  return std::string(R"({"name":"kubegap-webhook","title":"kubegap","version":)") + json_string(kVersion) + "}";
}

std::string capabilities() {
  return R"({"tools":{"listChanged":false},"resources":{"listChanged":false,"subscribe":false},)"
         R"("prompts":{"listChanged":false}})";
}

std::string supported_versions() {
  std::string out = "[";
  for (const auto v : kHandshakeVersions) out += json_string(v) + ",";
  return out + json_string(kModernVersion) + "]";
}

bool is_served(std::string_view version) {
  return version == kModernVersion || std::find(std::begin(kHandshakeVersions), std::end(kHandshakeVersions),
                                                version) != std::end(kHandshakeVersions);
}

const rapidjson::Value* member(const rapidjson::Value* object, const char* name) {
  if (object == nullptr || !object->IsObject()) return nullptr;
  const auto found = object->FindMember(name);
  return found == object->MemberEnd() ? nullptr : &found->value;
}

// percent_decode: "%20" -> " " in a file URI's path.
std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() + 0 && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string normalised(const std::string& directory) {
  std::error_code ec;
  const auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(directory, ec), ec);
  return ec ? directory : path.string();
}

}  // namespace

std::vector<std::string> roots_from_list(const rapidjson::Value& result) {
  std::vector<std::string> out;
  const rapidjson::Value* roots = member(&result, "roots");
  if (roots == nullptr || !roots->IsArray()) return out;
  for (const auto& root : roots->GetArray()) {
    const rapidjson::Value* uri = member(&root, "uri");
    if (uri == nullptr || !uri->IsString()) continue;
    const std::string_view text(uri->GetString(), uri->GetStringLength());
    if (!text.starts_with("file://")) continue;
    std::string_view path = text.substr(7);
    if (!path.starts_with('/')) path = path.substr(std::min(path.find('/'), path.size()));  // file://host/path
    if (!path.empty()) out.push_back(normalised(percent_decode(path)));
  }
  return out;
}

McpSession::McpSession(McpOptions options, Send send)
    : options_(std::move(options)),
      send_(std::move(send)),
      catalog_(options_.policy, options_.policy_text, case_library()) {
  if (options_.working_directory.empty()) options_.working_directory = std::filesystem::current_path().string();
  options_.working_directory = normalised(options_.working_directory);
}

McpSession::~McpSession() { shutdown(); }

void McpSession::handle_line(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;  // blank lines between messages
  RpcParse parsed = parse_rpc_line(line);
  if (parsed.error) {
    send_(rpc_error_line(*parsed.error));
    return;
  }
  handle(*parsed.message);
}

void McpSession::oversized(std::size_t bytes) {
  fail("null", rpc_code::kInvalidRequest,
       "message of " + std::to_string(bytes) + " bytes or more is over the limit of " +
           std::to_string(options_.max_message_bytes) + " bytes (--max-message-bytes); it was dropped unread");
}

void McpSession::handle(const RpcMessage& message) {
  if (message.is_response()) return handle_response(message);
  // 2026-07-28: the version rides on each request; the handshake era negotiated it once.
  std::string version = negotiated_;
  if (const rapidjson::Value* v = member(member(message.params(), "_meta"), kVersionKey)) {
    version = v->IsString() ? v->GetString() : "";
    if (!is_served(version)) {
      if (message.is_request()) {
        fail(message.id, rpc_code::kUnsupportedProtocolVersion, "unsupported protocol version " + to_json(*v),
             R"({"supported":)" + supported_versions() + R"(,"requested":)" + to_json(*v) + "}");
      }
      return;
    }
  }
  if (message.is_notification()) {
    if (message.method == "notifications/cancelled") cancel(message.params());
    if (message.method == "notifications/roots/list_changed") {
      std::lock_guard lock(mutex_);
      client_roots_.reset();  // asked again at the next call that reads paths
    }
    return;  // notifications/initialized, roots/list_changed, ...: nothing to answer
  }
  handle_request(message, version);
}

void McpSession::handle_request(const RpcMessage& message, const std::string& version) {
  const bool modern = version == kModernVersion;
  const std::string& m = message.method;
  if (m == "initialize") return initialize(message);
  if (m == "ping") return send_(rpc_result_line(message.id, "{}"));
  if (m == "server/discover") {
    return reply(message.id,
                 R"({"supportedVersions":)" + supported_versions() + R"(,"capabilities":)" + capabilities() +
                     R"(,"serverInfo":)" + server_info() + R"(,"instructions":)" + json_string(kInstructions) +
                     R"(,"_meta":{")" + kServerInfoKey + R"(":)" + server_info() + "}}",
                 true, true);
  }
  if (m == "tools/list") return reply(message.id, catalog_.tools_list_json(), modern, true);
  if (m == "tools/call") return call_tool(message, modern);
  if (m == "resources/list") return reply(message.id, catalog_.resources_list_json(), modern, true);
  if (m == "resources/templates/list") return reply(message.id, catalog_.resource_templates_json(), modern, true);
  if (m == "resources/read") return read_resource(message, modern);
  if (m == "prompts/list") return reply(message.id, catalog_.prompts_list_json(), modern, true);
  if (m == "prompts/get") return get_prompt(message, modern);
  fail(message.id, rpc_code::kMethodNotFound, "method not found: " + json_string(m));
}

void McpSession::initialize(const RpcMessage& message) {
  const rapidjson::Value* requested = member(message.params(), "protocolVersion");
  if (requested == nullptr || !requested->IsString()) {
    return fail(message.id, rpc_code::kInvalidParams, "params.protocolVersion: required, a string",
                R"({"field":"protocolVersion"})");
  }
  // The spec: answer the version asked for when served, else the newest this server has.
  const std::string_view asked(requested->GetString(), requested->GetStringLength());
  const auto served = std::find(std::begin(kHandshakeVersions), std::end(kHandshakeVersions), asked);
  negotiated_ = std::string(served != std::end(kHandshakeVersions) ? *served : kHandshakeVersions[0]);
  client_has_roots_ = member(member(message.params(), "capabilities"), "roots") != nullptr;
  log_event(spdlog::level::info, "mcp: initialized",
            {{"asked", std::string(asked)}, {"version", negotiated_}, {"roots", client_has_roots_ ? "yes" : "no"}});
  send_(rpc_result_line(message.id, R"({"protocolVersion":)" + json_string(negotiated_) + R"(,"capabilities":)" +
                                        capabilities() + R"(,"serverInfo":)" + server_info() + R"(,"instructions":)" +
                                        json_string(kInstructions) + "}"));
}

void McpSession::reply(const std::string& id, std::string result_json, bool modern, bool cacheable) {
  // 2026-07-28 results say they are complete, and lists how long they may be cached.
  if (modern && result_json.size() > 2) {
    result_json.insert(
        1, cacheable ? R"("resultType":"complete","ttlMs":0,"cacheScope":"private",)" : R"("resultType":"complete",)");
  }
  send_(rpc_result_line(id, result_json));
}

void McpSession::fail(const std::string& id, int code, std::string message, std::string data) {
  send_(rpc_error_line(RpcError{code, std::move(message), std::move(data), id}));
}

void McpSession::read_resource(const RpcMessage& message, bool modern) {
  const rapidjson::Value* uri = member(message.params(), "uri");
  if (uri == nullptr || !uri->IsString()) {
    return fail(message.id, rpc_code::kInvalidParams, "params.uri: required, a string", R"({"field":"uri"})");
  }
  const auto found = catalog_.read_resource(std::string_view(uri->GetString(), uri->GetStringLength()));
  if (!found) {
    return fail(message.id, rpc_code::kResourceNotFound, "resource not found: " + to_json(*uri),
                R"({"uri":)" + to_json(*uri) + "}");
  }
  reply(message.id,
        R"({"contents":[{"uri":)" + json_string(found->uri) + R"(,"mimeType":)" + json_string(found->mime_type) +
            R"(,"text":)" + json_string(found->text) + "}]}",
        modern, true);
}

void McpSession::get_prompt(const RpcMessage& message, bool modern) {
  const rapidjson::Value* name = member(message.params(), "name");
  if (name == nullptr || !name->IsString()) {
    return fail(message.id, rpc_code::kInvalidParams, "params.name: required, a string", R"({"field":"name"})");
  }
  std::map<std::string, std::string> arguments;
  if (const rapidjson::Value* given = member(message.params(), "arguments"); given != nullptr && given->IsObject()) {
    for (const auto& a : given->GetObject()) {
      if (a.value.IsString()) arguments[a.name.GetString()] = a.value.GetString();
    }
  }
  const auto prompt = catalog_.prompt(name->GetString(), arguments);
  if (!prompt) {
    return fail(message.id, rpc_code::kInvalidParams, "params.name: no prompt " + to_json(*name),
                R"({"field":"name"})");
  }
  reply(message.id,
        R"({"description":)" + json_string(prompt->description) +
            R"(,"messages":[{"role":"user","content":{"type":"text","text":)" + json_string(prompt->text) + "}}]}",
        modern, false);
}

void McpSession::cancel(const rapidjson::Value* params) {
  const rapidjson::Value* id = member(params, "requestId");
  if (id == nullptr) return;
  std::lock_guard lock(mutex_);
  if (const auto it = in_flight_.find(to_json(*id)); it != in_flight_.end()) {
    it->second->store(true);
    log_event(spdlog::level::info, "mcp: call cancelled by the client", {{"id", it->first}});
  }
}

void McpSession::handle_response(const RpcMessage& message) {
  std::lock_guard lock(mutex_);
  const auto it = roots_requests_.find(message.id);
  if (it == roots_requests_.end()) return;  // not ours, or too late
  const auto result = message.body.FindMember("result");
  it->second = result != message.body.MemberEnd() ? roots_from_list(result->value) : std::vector<std::string>{};
  roots_answered_.notify_all();
}

std::optional<std::vector<std::string>> McpSession::roots(bool modern, std::string& why) {
  if (modern || !client_has_roots_) return std::vector<std::string>{options_.working_directory};
  std::unique_lock lock(mutex_);
  if (client_roots_) return client_roots_;  // until the client says its roots changed
  const std::string id = json_string("kubegap-roots-" + std::to_string(++next_request_));
  roots_requests_[id] = std::nullopt;
  lock.unlock();
  send_(rpc_request_line(id, "roots/list", "{}"));
  lock.lock();
  const bool answered = roots_answered_.wait_for(lock, options_.roots_timeout,
                                                 [&] { return roots_requests_[id].has_value() || stopping_; });
  std::optional<std::vector<std::string>> out = answered ? roots_requests_[id] : std::nullopt;
  roots_requests_.erase(id);
  if (!out) {
    why = "the client did not answer roots/list within " + std::to_string(options_.roots_timeout.count()) + " s";
  } else if (out->empty()) {
    why = "the client's roots name no local directory";
    out.reset();
  } else {
    client_roots_ = out;
  }
  return out;
}

void McpSession::call_tool(const RpcMessage& message, bool modern) {
  const rapidjson::Value* name = member(message.params(), "name");
  if (name == nullptr || !name->IsString()) {
    return fail(message.id, rpc_code::kInvalidParams, "params.name: required, the tool's name", R"({"field":"name"})");
  }
  const ToolSpec* tool = catalog_.tool(name->GetString());
  if (tool == nullptr) {
    return fail(message.id, rpc_code::kInvalidParams, "params.name: unknown tool " + to_json(*name) + " (tools/list)",
                R"({"field":"name"})");
  }
  auto arguments = std::make_shared<rapidjson::Document>();
  arguments->SetObject();
  if (const rapidjson::Value* given = member(message.params(), "arguments")) {
    arguments->CopyFrom(*given, arguments->GetAllocator());
  }
  if (const auto wrong = check_arguments(*arguments, tool->input_schema)) {
    return fail(message.id, rpc_code::kInvalidParams, wrong->message, R"({"field":)" + json_string(wrong->field) + "}");
  }
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(mutex_);
  reap_finished_calls();
  if (stopping_) return;
  if (in_flight_.contains(message.id)) {
    return fail(message.id, rpc_code::kInvalidRequest,
                "request id " + message.id + " is already in use by a call in flight");
  }
  if (in_flight_.size() >= options_.max_calls) {
    return fail(
        message.id, rpc_code::kInternalError,
        "server busy: " + std::to_string(in_flight_.size()) + " tool calls in flight; retry when one has answered");
  }
  in_flight_[message.id] = cancelled;
  calls_.push_back(Call{std::thread([this, id = message.id, tool = tool->name, arguments, cancelled, done, modern] {
                          run_call(id, tool, *arguments, cancelled, modern);
                          done->store(true);
                        }),
                        done});
}

void McpSession::run_call(const std::string& id, const std::string& tool, const rapidjson::Value& arguments,
                          const std::shared_ptr<std::atomic<bool>>& cancelled, bool modern) {
  ToolResult result;
  std::string why;
  const auto roots_found = arguments.HasMember("paths") ? roots(modern, why) : std::vector<std::string>{};
  if (!roots_found) {
    result = ToolResult{true, why + ": cannot tell which paths may be read", {}};
  } else {
    // The client's roots: relative paths are relative to the first (its workspace).
    const bool client_roots =
        !roots_found->empty() && (roots_found->size() != 1 || roots_found->front() != options_.working_directory);
    const ToolContext context{
        options_.policy,
        [cancelled] { return cancelled->load(); },
        *roots_found,
        client_roots ? roots_found->front() : std::string(),
        [this](const std::string& c) {
          auto endpoint = find_endpoint(options_.kubeconfig, c.empty() ? options_.context : c);
          if (const auto warning = vet_tls_verification(endpoint, options_.allow_insecure_kubeconfig)) {
            log_event(spdlog::level::warn, "mcp: kubeconfig skips TLS verification", {{"detail", *warning}});
          }
          return endpoint;
        },
        options_.request_timeout};
    result = kubegap::call_tool(tool, arguments, context);
  }
  {
    std::lock_guard lock(mutex_);
    in_flight_.erase(id);
  }
  if (cancelled->load()) return;  // a cancelled request gets no answer (the spec)
  std::string json = R"({"content":[{"type":"text","text":)" + json_string(result.text) + "}]";
  if (!result.structured.empty()) json += R"(,"structuredContent":)" + result.structured;
  json += std::string(R"(,"isError":)") + (result.is_error ? "true" : "false") + "}";
  reply(id, std::move(json), modern, false);
}

void McpSession::reap_finished_calls() {
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t McpSession::calls_in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_.size();
}

void McpSession::shutdown() {
  std::vector<Call> calls;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [id, cancelled] : in_flight_) cancelled->store(true);
    calls.swap(calls_);
    roots_answered_.notify_all();
  }
  for (auto& call : calls) call.thread.join();
}

}  // namespace kubegap
