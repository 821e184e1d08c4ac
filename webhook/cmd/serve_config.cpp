#include "webhook/cmd/serve_config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <thread>

#include "webhook/core/memory_budget.h"

namespace kubegap {
namespace {

namespace net = boost::asio;

AuditOptions audit_options_from(const ParsedFlags& flags) {
  AuditOptions options;
  options.interval = std::chrono::seconds(flags.integer("--audit-interval", 0, 7 * 24 * 3600));
  const std::string reports = flags.value("--audit-reports");  // one of its words: parse_flags checked
  options.write_reports = reports != "none";
  if (reports == "openreports") options.flavour = ReportFlavour::kOpenReports;
  const char* pod_namespace = std::getenv("POD_NAMESPACE");
  if (pod_namespace != nullptr && *pod_namespace != '\0') options.lease_namespace = pod_namespace;
  if (const auto lease = flags.given("--audit-lease")) {
    const auto slash = lease->find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == lease->size()) {
      throw UsageError{"flag --audit-lease: expected NAMESPACE/NAME, got \"" + *lease + "\""};
    }
    options.lease_namespace = lease->substr(0, slash);
    options.lease_name = lease->substr(slash + 1);
  }
  return options;
}

ServerOptions server_options_from(const ParsedFlags& flags) {
  ServerOptions options;
  options.listen = parse_endpoint("listen", flags.value("--listen"));
  options.body_limit = static_cast<std::size_t>(flags.integer("--max-body-bytes", 1024, 1LL << 30));
  if (flags.given("--memory-budget")) {
    options.memory_budget = static_cast<std::size_t>(flags.integer("--memory-budget", 0, 1LL << 40));
  }
  if (options.memory_budget != 0 && options.memory_budget < worst_request_charge(options.body_limit)) {
    throw UsageError{"flag --memory-budget: " + std::to_string(options.memory_budget) +
                     " bytes cannot hold one request of --max-body-bytes " + std::to_string(options.body_limit) +
                     " (charged up to " + std::to_string(worst_request_charge(options.body_limit)) +
                     "); raise it or lower --max-body-bytes"};
  }
  options.max_connections = static_cast<std::size_t>(flags.integer("--max-connections", 2, 1 << 20));
  options.reserved_connections = (options.max_connections + 63) / 64;
  options.first_request_timeout = std::chrono::seconds(flags.integer("--first-request-timeout", 1, 3600));
  options.request_timeout = std::chrono::seconds(flags.integer("--request-timeout", 1, 3600));
  if (flags.given("--max-connections-per-source")) {
    options.max_connections_per_source = static_cast<std::size_t>(
        flags.integer("--max-connections-per-source", 1, static_cast<std::int64_t>(options.max_connections)));
  }
  return options;
}

}  // namespace

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

ServeConfig serve_config_from(const ParsedFlags& flags) {
  ServeConfig config;
  config.tls_cert = flags.required("--tls-cert");
  config.tls_key = flags.required("--tls-key");
  config.client_ca = flags.value("--client-ca");
  if (flags.given("--client-names")) {
    if (config.client_ca.empty())
      throw UsageError{"flag --client-names needs --client-ca (names are read from a verified certificate)"};
    std::string names = *flags.given("--client-names");
    for (std::size_t at = 0; at <= names.size();) {
      const auto comma = std::min(names.find(',', at), names.size());
      std::string name = names.substr(at, comma - at);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (name.empty()) throw UsageError{"flag --client-names: an empty name in \"" + names + "\""};
      config.client_names.push_back(std::move(name));
      at = comma + 1;
    }
  }
  config.server = server_options_from(flags);
  config.health_listen = parse_endpoint("health-listen", flags.value("--health-listen"));
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  config.threads = flags.given("--threads") ? static_cast<int>(flags.integer("--threads", 1, 256))
                                            : static_cast<int>(std::min(cpus, 256u));
  config.shutdown_timeout = std::chrono::seconds(flags.integer("--shutdown-timeout", 0, 3600));
  config.log_format = flags.value("--log-format") == "json" ? LogFormat::kJson : LogFormat::kText;
  config.log_level = flags.value("--log-level");
  config.audit = audit_options_from(flags);
  config.policy_file = flags.given("--policy");
  config.cluster_state = flags.given("--cluster-state");
  config.kubeconfig = flags.given("--kubeconfig");
  config.allow_insecure_kubeconfig = flags.has("--allow-insecure-kubeconfig");
  if (config.cluster_state && config.kubeconfig) throw UsageError{"use --cluster-state or --kubeconfig, not both"};
  config.cluster_sync_timeout = std::chrono::seconds(flags.integer("--cluster-sync-timeout", 0, 3600));
  config.reload_interval = std::chrono::seconds(flags.integer("--reload-interval", 1, 3600));
  return config;
}

}  // namespace kubegap
