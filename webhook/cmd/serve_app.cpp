#include "webhook/cmd/serve_app.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <mutex>

#include "webhook/cmd/allocator.h"
#include "webhook/core/build_info.h"
#include "webhook/core/cluster_state_file.h"
#include "webhook/core/memory_budget.h"
#include "webhook/core/policy_loader.h"
#include "webhook/kube/kube_config.h"
#include "webhook/server/reloaders.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {
namespace {
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}
}  // namespace
namespace {

namespace net = boost::asio;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

std::string address_of(const net::ip::tcp::endpoint& endpoint) {
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

}  // namespace

ServeApp::ServeApp(ServeConfig config)
    : config_(std::move(config)),
      ioc_(config_.threads),
      policies_(config_.policy_file ? load_policy_file(*config_.policy_file) : default_policy()),
      tls_(config_.tls_cert, config_.tls_key, config_.client_ca, config_.client_names),
      review_work_(net::make_work_guard(ioc_)) {
  open_cluster_view();
  handler_ = std::make_unique<ReviewHandler>(policies_, *cluster_);
  ServerOptions server_options = config_.server;
  server_options.one_loop_thread = config_.threads == 1;  // run_loops: --threads threads run ioc_
  server_ = std::make_unique<WebhookServer>(ioc_, tls_, *handler_, metrics_, server_options);
  health_ = std::make_unique<HealthServer>(control_, readiness_, metrics_, config_.health_listen);
}

void ServeApp::open_cluster_view() {
  if (config_.cluster_state) {
    cluster_ = std::make_unique<StaticClusterView>(load_cluster_state_file(*config_.cluster_state));
    cluster_source_ = *config_.cluster_state;
    return;
  }
  auto endpoint = config_.kubeconfig ? std::optional(load_kubeconfig(*config_.kubeconfig)) : in_cluster_endpoint();
  if (!endpoint) {
    cluster_ = std::make_unique<NoClusterView>();
    return;
  }
  if (const auto warning = vet_tls_verification(*endpoint, config_.allow_insecure_kubeconfig)) {
    log_event(spdlog::level::warn, "kubeconfig skips TLS verification", {{"detail", *warning}});
  }
  cluster_source_ = "live from " + endpoint->source + " (https://" + endpoint->host + ":" + endpoint->port + ")";
  if (config_.audit.interval.count() > 0) {
    audit_ = std::make_unique<BackgroundAudit>(control_, *endpoint, policies_, metrics_, config_.audit);
  }
  auto live = std::make_unique<ClusterWatcher>(control_, std::move(*endpoint), metrics_);
  watcher_ = live.get();
  metrics_.cluster_view_enabled();
  cluster_ = std::move(live);
}

int ServeApp::run() {
  tune_allocator_for_serving();
  start();
  run_loops();
  spdlog::default_logger()->flush();
  return 0;
}

void ServeApp::start() {
  note_certificate(tls_, metrics_);
  net::co_spawn(control_, renew_certificate_note(), net::detached);
  tls_watch_ = watch_tls_files(control_, tls_, metrics_, config_.reload_interval);
  tls_watch_->start();
  if (config_.policy_file) {
    policy_watch_ = watch_policy_file(control_, *config_.policy_file, policies_, metrics_, config_.reload_interval);
    policy_watch_->start();
  }
  const auto bound = server_->listen();
  const auto health_bound = health_->listen();
  if (audit_) audit_->start();
  if (watcher_ == nullptr) {
    readiness_.mark_ready();
  } else {
    watcher_->start();
    net::co_spawn(control_, wait_for_sync(), net::detached);
  }
  log_serving(bound, health_bound);
  net::co_spawn(control_, shut_down_on_signal(), net::detached);
}

void ServeApp::log_serving(const net::ip::tcp::endpoint& bound, const net::ip::tcp::endpoint& health_bound) {
  const std::size_t budget = server_->memory_budget().capacity();
  log_event(spdlog::level::info, "serving",
            {{"version", kVersion},
             {"listen", address_of(bound)},
             {"health_listen", address_of(health_bound)},
             {"policy", config_.policy_file.value_or("built-in default")},
             {"client_ca", tls_.client_ca_file().empty() ? "none: any client may connect" : tls_.client_ca_file()},
             {"client_names", config_.client_names.empty() ? "any" : join_names(config_.client_names)},
             {"cluster_view", cluster_source_},
             {"background_audit", audit_ ? "every " + std::to_string(config_.audit.interval.count()) + " s" : "off"},
             {"threads", std::to_string(config_.threads), false},
             {"allocator", allocator_name()},
             {"memory_budget", std::to_string(budget), false}});
  // A budget the container cannot hold (a small limit with a large --max-body-bytes, or
  // an explicit --memory-budget) defeats its purpose: say so where the operator looks.
  if (const auto limit = container_memory_limit(); limit && budget + kMemoryReserve > *limit) {
    log_event(spdlog::level::warn, "memory budget does not fit the container's memory limit",
              {{"memory_budget", std::to_string(budget), false},
               {"limit", std::to_string(*limit), false},
               {"hint", "raise the limit to the budget plus 64 MiB, or lower --max-body-bytes / --memory-budget"}});
  }
  flush_logs();
}

// renew_certificate_note: the expiry again twice a day, so a certificate that nobody
// rotates is warned about when it crosses the 30-day line, not only at start.
net::awaitable<void> ServeApp::renew_certificate_note() {
  net::steady_timer timer(co_await net::this_coro::executor);
  for (;;) {
    timer.expires_after(std::chrono::hours(12));
    if (auto [ec] = co_await timer.async_wait(kAwait); ec) co_return;
    note_certificate(tls_, metrics_);
  }
}

// wait_for_sync: ready once the view has synced, or after the timeout: a webhook that
// never becomes ready because the API server is slow would block its own rollout.
net::awaitable<void> ServeApp::wait_for_sync() {
  net::steady_timer timer(co_await net::this_coro::executor);
  const auto until = std::chrono::steady_clock::now() + config_.cluster_sync_timeout;
  while (!watcher_->synced() && std::chrono::steady_clock::now() < until) {
    timer.expires_after(std::chrono::milliseconds(100));
    if (auto [ec] = co_await timer.async_wait(kAwait); ec) co_return;
  }
  if (!watcher_->synced()) {
    log_event(spdlog::level::warn, "cluster view not synced in time; ready without it",
              {{"timeout_s", std::to_string(config_.cluster_sync_timeout.count()), false}});
  }
  readiness_.mark_ready();
}

// shut_down_on_signal: on SIGTERM/SIGINT, not ready, the watchers stopped, the server
// drained, then both loops stop.
net::awaitable<void> ServeApp::shut_down_on_signal() {
  const auto [ec, signal] = co_await signals_.async_wait(kAwait);
  if (ec) co_return;
  net::co_spawn(control_, stop_on_second_signal(), net::detached);
  readiness_.mark_shutting_down();
  log_event(spdlog::level::info, "shutting down", {{"signal", std::to_string(signal), false}});
  flush_logs();
  if (watcher_ != nullptr) watcher_->stop();
  tls_watch_->stop();
  if (policy_watch_) policy_watch_->stop();
  // The audit's run in progress ends at its next request, and its Lease is given up while
  // the server drains, so another replica takes the audit over at once. (After a second
  // signal the Lease is not released: it expires, 15 s later.)
  if (audit_) audit_->stop();
  // The drain waits here, on the control loop (health keeps answering, not ready), while
  // the connections finish their requests on the review loop. Nothing awaits across the
  // two loops, so either can be destroyed first after a second signal.
  co_await server_->drain(config_.shutdown_timeout);
  // The Lease's release is a request on this loop: the loop stops only once it is done.
  if (audit_) co_await audit_->async_stop(kAwait);
  health_->stop();
  log_event(spdlog::level::info, "stopped", {{"open_connections", std::to_string(server_->connections()), false}});
  flush_logs();
  review_work_.reset();
  ioc_.stop();
  control_.stop();
}

// stop_on_second_signal: a second signal during the drain stops at once.
net::awaitable<void> ServeApp::stop_on_second_signal() {
  const auto [ec, signal] = co_await signals_.async_wait(kAwait);
  if (ec) co_return;
  log_event(spdlog::level::warn, "second signal: stopping without waiting for the drain",
            {{"signal", std::to_string(signal), false}});
  flush_logs();
  ioc_.stop();
  control_.stop();
}

// run_loops: the control loop on a thread of its own, the review loop on --threads
// threads (this one among them). A failure escaping either loop stops both, so no thread
// is left waiting on the other; it is rethrown here.
void ServeApp::run_loops() {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto run_loop = [&](net::io_context& loop) {
    try {
      loop.run();
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      ioc_.stop();
      control_.stop();
    }
  };
  std::thread control_thread([&] { run_loop(control_); });
  std::vector<std::thread> workers;
  for (int i = 1; i < config_.threads; ++i) workers.emplace_back([&] { run_loop(ioc_); });
  run_loop(ioc_);
  for (auto& worker : workers) worker.join();
  control_thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kubegap
