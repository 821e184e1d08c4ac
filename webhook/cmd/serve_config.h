#pragma once
// ServeConfig: `serve`'s command line, parsed and checked, before anything is opened:
// every usage error is found here, so a wrong flag never leaves a half-started server.
//
//   ServeConfig config = serve_config_from(parse_flags(*find_command("serve"), args));
//   return ServeApp(config).run();

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "webhook/cmd/flags.h"
#include "webhook/report/background_audit.h"
#include "webhook/server/server_options.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {

struct ServeConfig {
  std::string tls_cert, tls_key, client_ca;  // client_ca empty: any client may connect
  std::vector<std::string> client_names;     // empty: any name client_ca signed
  ServerOptions server;                      // listen address, limits, deadlines
  boost::asio::ip::tcp::endpoint health_listen;
  int threads = 1;
  std::optional<std::string> policy_file;    // none: the built-in default policy
  std::optional<std::string> cluster_state;  // a file for the cluster view
  std::optional<std::string> kubeconfig;     // the live cluster view through this kubeconfig
  bool allow_insecure_kubeconfig = false;    // --allow-insecure-kubeconfig
  std::chrono::seconds cluster_sync_timeout{30};
  AuditOptions audit;
  std::chrono::seconds shutdown_timeout{25};
  std::chrono::seconds reload_interval{2};
  std::string log_level = "info";
  LogFormat log_format = LogFormat::kText;
};

// serve_config_from: the config of `flags` (parsed against the serve CommandSpec); throws
// UsageError naming the flag. Reads $POD_NAMESPACE for the audit Lease's default.
ServeConfig serve_config_from(const ParsedFlags& flags);

// parse_endpoint: HOST:PORT ("[::1]:8443", ":8443" for every address, "localhost:0"), or
// UsageError naming `flag`.
boost::asio::ip::tcp::endpoint parse_endpoint(const std::string& flag, const std::string& text);

}  // namespace kubegap
