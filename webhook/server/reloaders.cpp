#include "webhook/server/reloaders.h"

#include "webhook/core/policy_loader.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {

void note_certificate(const ServerTlsStore& tls, Metrics& metrics) {
  const auto not_after = tls.not_after();
  metrics.tls_certificate_loaded(
      std::chrono::duration_cast<std::chrono::seconds>(not_after.time_since_epoch()).count());
  const auto left = not_after - std::chrono::system_clock::now();
  if (left < kExpiryWarning) {
    log_event(
        spdlog::level::warn, "serving certificate expires soon",
        {{"cert", tls.cert_file()},
         {"days_left", std::to_string(std::chrono::duration_cast<std::chrono::hours>(left).count() / 24), false}});
  }
}

std::unique_ptr<FileWatcher> watch_tls_files(boost::asio::io_context& ioc, ServerTlsStore& tls, Metrics& metrics,
                                             std::chrono::milliseconds interval) {
  std::vector<std::string> files{tls.cert_file(), tls.key_file()};
  if (!tls.client_ca_file().empty()) files.push_back(tls.client_ca_file());
  auto watcher = std::make_unique<FileWatcher>(ioc, std::move(files), interval, [&tls, &metrics] {
    std::string error;
    const bool ok = tls.reload(error);
    metrics.tls_reloaded(ok);
    if (!ok) {
      log_event(spdlog::level::warn, "serving certificate not reloaded; keeping the current one", {{"error", error}});
      return false;
    }
    log_event(spdlog::level::info, "serving certificate reloaded", {{"cert", tls.cert_file()}});
    note_certificate(tls, metrics);
    return true;
  });
  return watcher;
}

std::unique_ptr<FileWatcher> watch_policy_file(boost::asio::io_context& ioc, std::string path, PolicyStore& policies,
                                               Metrics& metrics, std::chrono::milliseconds interval) {
  return std::make_unique<FileWatcher>(ioc, std::vector<std::string>{path}, interval, [path, &policies, &metrics] {
    try {
      policies.set(load_policy_file(path));
      metrics.policy_reloaded(true);
      log_event(spdlog::level::info, "policy reloaded", {{"policy", path}});
    } catch (const std::exception& e) {
      metrics.policy_reloaded(false);
      log_event(spdlog::level::err, "policy rejected; keeping the policy in force", {{"error", e.what()}});
    }
    // Either way the change was taken: a bad file is not retried until it changes again.
    return true;
  });
}

}  // namespace kubegap
