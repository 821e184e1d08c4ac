#include "webhook/cluster_watcher.h"

#include <random>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include "webhook/logging.h"
#include "webhook/watch_stream.h"
#include "webhook/yaml_json.h"

namespace kubegap {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto kAwait = net::as_tuple(net::use_awaitable);
using Stream = beast::ssl_stream<beast::tcp_stream>;

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

ssl::context make_client_tls_context(const KubeEndpoint& endpoint) {
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (!endpoint.ca_pem.empty()) {
    ctx.add_certificate_authority(net::buffer(endpoint.ca_pem), ec);
    if (ec) throw ConfigError(endpoint.source + ": cannot use the API server's CA: " + ec.message());
  } else {
    ctx.set_default_verify_paths(ec);
  }
  ctx.set_verify_mode(endpoint.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
  if (!endpoint.client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(endpoint.client_cert_pem), ec);
    if (!ec) ctx.use_private_key(net::buffer(endpoint.client_key_pem), ssl::context::pem, ec);
    if (ec) throw ConfigError(endpoint.source + ": cannot use the client certificate: " + ec.message());
  }
  return ctx;
}

// Resource: one listed-and-watched resource and its loop state.
template <typename T>
struct Watched {
  const char* name;        // for logs and metrics: "poddisruptionbudgets", "nodes"
  const char* path;        // "/apis/policy/v1/poddisruptionbudgets"
  ResourceStore<T> store;
  bool listed = false;
  std::shared_ptr<Stream> active;  // the watch connection, closed by stop()
  bool dirty = false;              // changed since the last published snapshot
};

struct ClusterWatcher::Impl : std::enable_shared_from_this<ClusterWatcher::Impl> {
  Impl(net::io_context& ioc_, KubeEndpoint endpoint_, Metrics& metrics_, WatcherOptions options_)
      : ioc(ioc_), strand(net::make_strand(ioc_)), endpoint(std::move(endpoint_)), metrics(metrics_),
        options(options_), tls(make_client_tls_context(endpoint)),
        publish_timer(strand), random(std::random_device{}()) {}

  net::io_context& ioc;
  net::strand<net::io_context::executor_type> strand;  // every member below lives on it
  KubeEndpoint endpoint;
  Metrics& metrics;
  WatcherOptions options;
  ssl::context tls;
  // What reviews read: the latest snapshot (atomic, no mutex) and whether both resources
  // have been listed once.
  std::atomic<std::shared_ptr<const ClusterSnapshot>> snapshot;
  std::atomic<bool> synced{false};
  net::steady_timer publish_timer;
  bool publish_pending = false;
  bool stopped = false;
  std::mt19937 random;
  Watched<DisruptionBudget> budgets{"poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets",
                                    {decode_budget_object, budget_key}, false, nullptr};
  Watched<NodeInfo> nodes{"nodes", "/api/v1/nodes", {decode_node_object, node_key}, false, nullptr};

  // connect: a new TLS connection to the API server (one per list and per watch).
  net::awaitable<std::pair<beast::error_code, std::shared_ptr<Stream>>> connect() {
    auto stream = std::make_shared<Stream>(strand, tls);
    tcp::resolver resolver(strand);
    auto [ec, results] = co_await resolver.async_resolve(endpoint.host, endpoint.port, kAwait);
    if (ec) co_return std::pair{ec, nullptr};
    auto& lowest = beast::get_lowest_layer(*stream);
    lowest.expires_after(std::chrono::seconds(10));
    auto [connect_ec, ep] = co_await lowest.async_connect(results, kAwait);
    if (connect_ec) co_return std::pair{connect_ec, nullptr};
    if (!is_ip_address(endpoint.host)) SSL_set_tlsext_host_name(stream->native_handle(), endpoint.host.c_str());
    if (!endpoint.insecure_skip_verify) stream->set_verify_callback(ssl::host_name_verification(endpoint.host));
    auto [hs_ec] = co_await stream->async_handshake(ssl::stream_base::client, kAwait);
    if (hs_ec) co_return std::pair{hs_ec, nullptr};
    co_return std::pair{beast::error_code{}, stream};
  }

  http::request<http::empty_body> request(const std::string& target) const {
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, endpoint.host.find(':') == std::string::npos ? endpoint.host : "[" + endpoint.host + "]");
    req.set(http::field::user_agent, "kubegap-webhook");
    req.set(http::field::accept, "application/json");
    if (const auto token = endpoint.bearer_token(); !token.empty()) {
      req.set(http::field::authorization, "Bearer " + token);
    }
    return req;
  }

  // list: every page; false (and `error`) on failure.
  template <typename T>
  net::awaitable<bool> list(Watched<T>& resource, std::string& error) {
    resource.store.start_list();
    std::string continue_token;
    do {
      std::string target = std::string(resource.path) + "?limit=" + std::to_string(options.page_size);
      if (!continue_token.empty()) target += "&continue=" + url_encode(continue_token);
      auto [ec, stream] = co_await connect();
      if (ec) {
        error = "connect: " + ec.message();
        co_return false;
      }
      beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(60));
      auto req = request(target);
      if (auto [write_ec, n] = co_await http::async_write(*stream, req, kAwait); write_ec) {
        error = "list request: " + write_ec.message();
        co_return false;
      }
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      parser.body_limit(512 * 1024 * 1024);
      if (auto [read_ec, n] = co_await http::async_read(*stream, buffer, parser, kAwait); read_ec) {
        error = "list response: " + read_ec.message();
        co_return false;
      }
      const auto& response = parser.get();
      if (response.result() == http::status::gone && !continue_token.empty()) {
        error = "continue token expired (410)";
        co_return false;
      }
      if (response.result() != http::status::ok) {
        error = "list " + std::string(resource.path) + ": HTTP " + std::to_string(response.result_int()) +
                ": " + response.body().substr(0, 300);
        co_return false;
      }
      error = resource.store.add_list_page(response.body(), continue_token);
      if (!error.empty()) co_return false;
      beast::error_code ignored;
      beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
    } while (!continue_token.empty());
    resource.store.finish_list();
    co_return true;
  }

  // watch: one watch request until the server ends it (timeout: normal), the store asks
  // for a relist, or an error. Returns the reason it ended; `relist` is set on 410.
  template <typename T>
  net::awaitable<std::string> watch(Watched<T>& resource, bool& relist) {
    const std::string target = std::string(resource.path) + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                               url_encode(resource.store.resource_version()) +
                               "&timeoutSeconds=" + std::to_string(options.watch_timeout.count());
    auto [ec, stream] = co_await connect();
    if (ec) co_return "connect: " + ec.message();
    if (stopped) co_return "";
    resource.active = stream;
    // However the watch ends, the connection is dropped with it.
    struct Release {
      std::shared_ptr<Stream>& active;
      ~Release() { active.reset(); }
    } release{resource.active};
    auto& lowest = beast::get_lowest_layer(*stream);
    lowest.expires_after(std::chrono::seconds(30));
    auto req = request(target);
    if (auto [write_ec, n] = co_await http::async_write(*stream, req, kAwait); write_ec) co_return "watch request: " + write_ec.message();
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);  // a watch streams for minutes
    if (auto [header_ec, n] = co_await http::async_read_header(*stream, buffer, parser, kAwait); header_ec) {
      co_return "watch response: " + header_ec.message();
    }
    if (parser.get().result() == http::status::gone) {
      relist = true;
      co_return "";
    }
    if (parser.get().result() != http::status::ok) {
      co_return "watch: HTTP " + std::to_string(parser.get().result_int());
    }
    LineSplitter splitter;
    std::string problem;
    std::array<char, 64 * 1024> chunk;
    while (!parser.is_done() && problem.empty() && !relist) {
      // Bookmarks arrive about once a minute; a silent stream past its timeout is dead.
      lowest.expires_after(options.watch_timeout + std::chrono::seconds(60));
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      // read_some, not read: read would wait for the whole 64 KiB buffer to fill, and a
      // quiet watch sends one small event at a time.
      auto [read_ec, n] = co_await http::async_read_some(*stream, buffer, parser, kAwait);
      if (read_ec == http::error::need_buffer) read_ec = {};
      if (read_ec) {
        problem = read_ec == http::error::end_of_stream ? "" : "watch stream: " + read_ec.message();
        break;
      }
      const std::size_t got = chunk.size() - parser.get().body().size;
      bool changed = false;
      const bool fits = splitter.feed({chunk.data(), got}, [&](std::string_view line) {
        if (relist || !problem.empty()) return;
        std::string error;
        switch (resource.store.apply_event(line, &error)) {
          case WatchResult::kChanged: changed = true; break;
          case WatchResult::kUnchanged: break;  // e.g. a Node's status heartbeat
          case WatchResult::kBookmark: break;
          case WatchResult::kRelist: relist = true; break;
          case WatchResult::kError: problem = "watch event: " + error; break;
        }
      });
      if (!fits) problem = "watch event larger than the line limit";
      if (changed) {
        resource.dirty = true;
        schedule_publish();
      }
    }
    co_return problem;
  }

  std::chrono::milliseconds backoff(int failures) {
    const auto exponent = std::min(failures, 16);
    const auto ceiling = std::min<std::chrono::milliseconds>(options.backoff_cap, options.backoff_base * (1LL << exponent));
    // "Full jitter" between half and all of the ceiling, so many replicas do not retry
    // in step after an API server restart.
    std::uniform_int_distribution<long long> spread(ceiling.count() / 2, ceiling.count());
    return std::chrono::milliseconds(spread(random));
  }

  template <typename T>
  net::awaitable<void> run(Watched<T>& resource) {
    int failures = 0;
    net::steady_timer timer(strand);
    while (!stopped) {
      std::string error;
      if (!resource.listed) {
        if (co_await list(resource, error)) {
          resource.listed = true;
          failures = 0;
          log_event(spdlog::level::info, "cluster view listed",
                    {{"resource", resource.name}, {"objects", std::to_string(resource.store.size()), false},
                     {"resource_version", resource.store.resource_version()}});
          metrics.cluster_synced(resource.name, resource.store.size());
          resource.dirty = true;
          schedule_publish();
          continue;
        }
      } else {
        bool relist = false;
        error = co_await watch(resource, relist);
        if (stopped) break;
        metrics.cluster_watch_restarted(resource.name);
        if (relist) {
          log_event(spdlog::level::info, "cluster view relisting", {{"resource", resource.name}, {"reason", "410 Gone"}});
          resource.listed = false;
          continue;
        }
        if (error.empty()) {  // the watch timed out as asked: renew it
          failures = 0;
          metrics.cluster_synced(resource.name, resource.store.size());
          continue;
        }
        // An event we cannot read would come back on every resume from the same version:
        // list again instead (after the backoff below).
        if (error.rfind("watch event", 0) == 0) resource.listed = false;
      }
      if (stopped) break;
      metrics.cluster_error(resource.name);
      const auto delay = backoff(failures++);
      log_event(spdlog::level::warn, "cluster view error",
                {{"resource", resource.name}, {"error", error}, {"retry_in_ms", std::to_string(delay.count()), false}});
      timer.expires_after(delay);
      co_await timer.async_wait(kAwait);
    }
  }

  // schedule_publish: a new snapshot soon; bursts of events make one snapshot.
  void schedule_publish() {
    if (publish_pending || stopped) return;
    publish_pending = true;
    publish_timer.expires_after(options.publish_delay);
    publish_timer.async_wait([self = shared_from_this()](const beast::error_code& ec) {
      self->publish_pending = false;
      if (!ec && !self->stopped) self->publish();
    });
  }

  void publish() {
    if (!budgets.listed && !synced) return;
    if (!nodes.listed && !synced) return;
    // Only the half that changed is rebuilt (and re-indexed); the other is shared with the
    // previous snapshot, so a PDB change does not copy 5,000 Nodes, nor the reverse.
    const auto previous = snapshot.load();
    auto budget_half = budgets.dirty || !previous ? std::make_shared<const BudgetSet>(budgets.store.values())
                                                  : previous->shared_budgets();
    auto node_half = nodes.dirty || !previous ? std::make_shared<const NodeSet>(nodes.store.values())
                                              : previous->shared_nodes();
    budgets.dirty = nodes.dirty = false;
    snapshot.store(std::make_shared<const ClusterSnapshot>(std::move(budget_half), std::move(node_half)));
    metrics.cluster_published();
    metrics.cluster_objects(budgets.name, budgets.store.size());
    metrics.cluster_objects(nodes.name, nodes.store.size());
    if (!synced.exchange(true)) {
      log_event(spdlog::level::info, "cluster view synced",
                {{"poddisruptionbudgets", std::to_string(budgets.store.size()), false},
                 {"nodes", std::to_string(nodes.store.size()), false}});
    }
  }

  void stop() {
    stopped = true;
    publish_timer.cancel();
    for (auto* active : {&budgets.active, &nodes.active}) {
      if (*active) beast::get_lowest_layer(**active).cancel();
    }
  }
};

ClusterWatcher::ClusterWatcher(net::io_context& ioc, KubeEndpoint endpoint, Metrics& metrics, WatcherOptions options)
    : impl_(std::make_shared<Impl>(ioc, std::move(endpoint), metrics, options)) {}

bool ClusterWatcher::synced() const { return impl_->synced.load(); }

std::shared_ptr<const ClusterSnapshot> ClusterWatcher::snapshot() const { return impl_->snapshot.load(); }

ClusterWatcher::~ClusterWatcher() { stop(); }

void ClusterWatcher::start() {
  auto impl = impl_;
  net::co_spawn(impl->strand, [impl]() -> net::awaitable<void> { co_await impl->run(impl->budgets); }, net::detached);
  net::co_spawn(impl->strand, [impl]() -> net::awaitable<void> { co_await impl->run(impl->nodes); }, net::detached);
}

void ClusterWatcher::stop() {
  auto impl = impl_;
  net::post(impl->strand, [impl] { impl->stop(); });
}

}  // namespace kubegap
