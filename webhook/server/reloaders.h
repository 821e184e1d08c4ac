#pragma once
// Hot reload of what the operator mounts: the serving certificate (a Secret, rotated by
// cert-manager or by hand) and the policy (a ConfigMap). Neither needs a restart.
//
//   auto tls_watch = watch_tls_files(ioc, tls_store, metrics, std::chrono::seconds(2));
//   auto policy_watch = watch_policy_file(ioc, "/etc/kubegap/policy.yaml", policies, metrics, ...);

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "webhook/core/policy_store.h"
#include "webhook/server/file_watcher.h"
#include "webhook/server/tls.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

// Certificates closer than this to expiry are logged as a warning (at load and daily).
inline constexpr std::chrono::hours kExpiryWarning{24 * 30};

// watch_tls_files: new handshakes use the new certificate once its files change and
// load; open connections keep theirs. A pair that fails to load (a certificate swapped
// before its key) keeps the old one and is retried on the next tick.
std::unique_ptr<FileWatcher> watch_tls_files(boost::asio::io_context& ioc, ServerTlsStore& tls, Metrics& metrics,
                                             std::chrono::milliseconds interval);

// watch_policy_file: a changed policy file is validated and swapped in; an invalid one is
// logged and counted, and the policy in force stays.
std::unique_ptr<FileWatcher> watch_policy_file(boost::asio::io_context& ioc, std::string path, PolicyStore& policies,
                                               Metrics& metrics, std::chrono::milliseconds interval);

// note_certificate: records the expiry metric and warns when it is near.
void note_certificate(const ServerTlsStore& tls, Metrics& metrics);

}  // namespace kubegap
