#pragma once
// Reflector: keeps a ResourceStore equal to one resource on the API server, the way
// client-go's reflector does: list (in pages), then watch from the list's
// resourceVersion with bookmarks; renew the watch when its timeout ends; 410 Gone or an
// unreadable event -> list again; any other error -> exponential backoff with jitter.
// `on_change` runs (on the client's executor) after each list and after each read that
// changed something the checks read; a Node's status heartbeat does not call it.
//
// An optional resource (a CRD that may not be installed, such as Kubeflow Trainer's
// runtimes) whose list is answered 404 (not served) or 403 (not allowed) is "absent": its
// store is emptied, `on_change` runs, one info line is logged, and it is listed again
// every `absent_recheck` without counting errors or logging again; a watch answered
// 404/403 (the CRD deleted) lists again, which finds it absent. Its first failed list also
// runs `on_change`, so a watcher does not wait on a resource it can do without.
//
//   Reflector<NodeInfo> nodes("nodes", "/api/v1/nodes", {decode_node_object, node_key},
//                             client, metrics, options, [&] { mark_dirty(); });
//   co_spawn(strand, nodes.run(), detached);   ...   nodes.stop();

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <utility>

#include "webhook/kube/kube_client.h"
#include "webhook/kube/watch_stream.h"
#include "webhook/telemetry/logging.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

struct WatcherOptions {
  std::chrono::seconds watch_timeout{300};  // server-side timeoutSeconds of each watch
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  std::chrono::milliseconds publish_delay{50};  // coalesces bursts of events
  std::size_t page_size = 500;
  // How often an absent optional resource (404/403 on list) is listed again: the watch
  // renewal cadence, so a CRD installed later is seen within about 5 minutes.
  std::chrono::milliseconds absent_recheck{300000};
};

// ResourcePresence: whether the resource must exist (built-in kinds) or may be absent
// (a CRD that is not installed, or not granted to the webhook).
enum class ResourcePresence { kRequired, kOptional };

// backoff_delay: the wait after `failures` consecutive failures: "full jitter" between
// half and all of min(cap, base * 2^failures), so many replicas do not retry in step
// after an API server restart.
template <typename Random>
std::chrono::milliseconds backoff_delay(const WatcherOptions& options, int failures, Random& random) {
  const auto exponent = std::min(failures, 16);
  const auto ceiling =
      std::min<std::chrono::milliseconds>(options.backoff_cap, options.backoff_base * (1LL << exponent));
  std::uniform_int_distribution<long long> spread(ceiling.count() / 2, ceiling.count());
  return std::chrono::milliseconds(spread(random));
}

template <typename T>
class Reflector {
 public:
  Reflector(const char* name, const char* path, ResourceStore<T> store, KubeClient& client, Metrics& metrics,
            const WatcherOptions& options, std::function<void()> on_change,
            ResourcePresence presence = ResourcePresence::kRequired)
      : name_(name),
        path_(path),
        store_(std::move(store)),
        client_(client),
        metrics_(metrics),
        options_(options),
        on_change_(std::move(on_change)),
        random_(std::random_device{}()),
        optional_(presence == ResourcePresence::kOptional) {}

  const char* name() const { return name_; }
  const ResourceStore<T>& store() const { return store_; }
  bool listed() const { return listed_; }
  // absent: an optional resource whose last list was answered 404 or 403 (store empty).
  bool absent() const { return absent_; }
  // tried: a list has ended at least once, listed or not.
  bool tried() const { return tried_; }

  boost::asio::awaitable<void> run();
  // stop: ends run() soon (call on the client's executor).
  void stop() {
    stopped_ = true;
    if (active_ != nullptr) active_->cancel();
    if (timer_ != nullptr) timer_->cancel();
  }

 private:
  // list: `status` is the HTTP status of a failed first page (0 without an answer).
  boost::asio::awaitable<bool> list(std::string& error, int& status);
  // watch: the error that ended the watch ("" when it timed out as asked); `relist` on
  // 410 Gone (or, for an optional resource, 404/403), `unreadable` when an event could not
  // be read (resuming would read it again).
  boost::asio::awaitable<std::string> watch(bool& relist, bool& unreadable);
  // unavailable: 404 (not served) or 403 (not allowed), which make an optional resource absent.
  static bool unavailable(int status) { return status == 404 || status == 403; }
  // wait_absent: the list said `status` (404/403): the resource is absent until `timer`
  // has waited absent_recheck.
  boost::asio::awaitable<void> wait_absent(int status, boost::asio::steady_timer& timer);

  const char* name_;  // for logs and metrics: "poddisruptionbudgets", "nodes"
  const char* path_;  // "/apis/policy/v1/poddisruptionbudgets"
  ResourceStore<T> store_;
  KubeClient& client_;
  Metrics& metrics_;
  WatcherOptions options_;
  std::function<void()> on_change_;
  std::mt19937 random_;
  bool optional_ = false;
  bool listed_ = false;
  bool absent_ = false;
  bool tried_ = false;
  int watch_status_ = 0;  // the last watch's HTTP status, for the relist's log line
  bool stopped_ = false;
  WatchResponse* active_ = nullptr;             // the open watch, cancelled by stop()
  boost::asio::steady_timer* timer_ = nullptr;  // the backoff wait, cancelled by stop()
};

template <typename T>
boost::asio::awaitable<bool> Reflector<T>::list(std::string& error, int& status) {
  status = 0;
  store_.start_list();
  std::string continue_token;
  do {
    std::string target = std::string(path_) + "?limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty()) target += "&continue=" + url_encode(continue_token);
    KubeResponse page = co_await client_.get(std::move(target), 512 * 1024 * 1024);
    if (!page.error.empty()) {
      error = "list " + std::string(path_) + ": " + page.error;
      co_return false;
    }
    if (page.status == 410 && !continue_token.empty()) {
      error = "continue token expired (410)";
      co_return false;
    }
    if (page.status != 200) {
      if (continue_token.empty()) status = page.status;
      error = "list " + std::string(path_) + ": HTTP " + std::to_string(page.status) + ": " + page.body.substr(0, 300);
      co_return false;
    }
    error = store_.add_list_page(page.body, continue_token);
    if (!error.empty()) co_return false;
  } while (!continue_token.empty() && !stopped_);
  if (stopped_) co_return false;  // a partial list never replaces the store
  store_.finish_list();
  co_return true;
}

template <typename T>
boost::asio::awaitable<std::string> Reflector<T>::watch(bool& relist, bool& unreadable) {
  const std::string target = std::string(path_) + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                             url_encode(store_.resource_version()) +
                             "&timeoutSeconds=" + std::to_string(options_.watch_timeout.count());
  auto [error, response] = co_await client_.watch(target);
  if (!error.empty()) co_return "watch " + error;
  if (stopped_) co_return "";
  watch_status_ = response->status();
  if (response->status() == 410 || (optional_ && unavailable(response->status()))) {
    relist = true;
    co_return "";
  }
  if (response->status() != 200) co_return "watch: HTTP " + std::to_string(response->status());
  active_ = response.get();
  struct Release {  // however the watch ends, stop() no longer reaches it
    WatchResponse*& active;
    ~Release() { active = nullptr; }
  } release{active_};
  LineSplitter splitter;
  std::string problem;
  while (problem.empty() && !relist && !stopped_) {
    // Bookmarks arrive about once a minute; a silent stream past its timeout is dead.
    auto [read_error, bytes] = co_await response->read(options_.watch_timeout + std::chrono::seconds(60));
    if (!read_error.empty()) {
      problem = "watch stream: " + read_error;
      break;
    }
    if (bytes.empty()) break;  // the server ended the watch (its timeout): renew it
    bool changed = false;
    const bool fits = splitter.feed(bytes, [&](std::string_view line) {
      if (relist || !problem.empty()) return;
      std::string event_error;
      switch (store_.apply_event(line, &event_error)) {
        case WatchResult::kChanged:
          changed = true;
          break;
        case WatchResult::kUnchanged:  // e.g. a Node's status heartbeat
        case WatchResult::kBookmark:
          break;
        case WatchResult::kRelist:
          relist = true;
          break;
        case WatchResult::kError:
          problem = "watch event: " + event_error;
          unreadable = true;
          break;
      }
    });
    if (!fits) {
      problem = "watch event larger than the line limit";
      unreadable = true;
    }
    if (changed) on_change_();
  }
  co_return problem;
}

template <typename T>
boost::asio::awaitable<void> Reflector<T>::wait_absent(int status, boost::asio::steady_timer& timer) {
  if (!absent_) {
    absent_ = true;
    store_.clear();
    // Once per absence, at info: a cluster without the CRD is an ordinary cluster.
    log_event(
        spdlog::level::info, status == 404 ? "cluster view resource not served" : "cluster view resource forbidden",
        {{"resource", name_},
         {"status", std::to_string(status), false},
         {"recheck_in_s",
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options_.absent_recheck).count()), false}});
    on_change_();
  }
  // In step with the API server: there is nothing to list (the stale-view alert stays quiet).
  metrics_.cluster_synced(name_, 0);
  timer.expires_after(options_.absent_recheck);
  co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

template <typename T>
boost::asio::awaitable<void> Reflector<T>::run() {
  constexpr auto kAwait = boost::asio::as_tuple(boost::asio::use_awaitable);
  int failures = 0;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  timer_ = &timer;
  struct Release {
    boost::asio::steady_timer*& timer;
    ~Release() { timer = nullptr; }
  } release{timer_};
  while (!stopped_) {
    std::string error;
    if (!listed_) {
      int status = 0;
      const bool listed = co_await list(error, status);
      const bool first = !tried_;
      tried_ = true;
      if (listed) {
        listed_ = true;
        absent_ = false;
        failures = 0;
        log_event(spdlog::level::info, "cluster view listed",
                  {{"resource", name_},
                   {"objects", std::to_string(store_.size()), false},
                   {"resource_version", store_.resource_version()}});
        metrics_.cluster_synced(name_, store_.size());
        on_change_();
        continue;
      }
      if (stopped_) break;
      if (optional_ && unavailable(status)) {
        failures = 0;
        co_await wait_absent(status, timer);
        continue;
      }
      // An optional resource: the watcher need not wait for it to be listed.
      if (optional_ && first) on_change_();
    } else {
      bool relist = false, unreadable = false;
      error = co_await watch(relist, unreadable);
      if (stopped_) break;
      metrics_.cluster_watch_restarted(name_);
      if (relist) {
        const bool gone = watch_status_ == 200 || watch_status_ == 410;
        log_event(spdlog::level::info, "cluster view relisting",
                  {{"resource", name_}, {"reason", gone ? "410 Gone" : "HTTP " + std::to_string(watch_status_)}});
        listed_ = false;
        continue;
      }
      if (error.empty()) {  // the watch timed out as asked: renew it
        failures = 0;
        metrics_.cluster_synced(name_, store_.size());
        continue;
      }
      // An event we cannot read would come back on every resume from the same version:
      // list again instead (after the backoff below).
      if (unreadable) listed_ = false;
    }
    if (stopped_) break;
    metrics_.cluster_error(name_);
    const auto delay = backoff_delay(options_, failures++, random_);
    log_event(spdlog::level::warn, "cluster view error",
              {{"resource", name_}, {"error", error}, {"retry_in_ms", std::to_string(delay.count()), false}});
    timer.expires_after(delay);
    co_await timer.async_wait(kAwait);
  }
}

}  // namespace kubegap
