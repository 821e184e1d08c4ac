#pragma once
// KubeClient: the transport under the cluster view (client-go's REST client): GETs to the
// API server with the endpoint's credentials, one TLS connection per request, answered
// either whole (a list page) or as a stream read while it arrives (a watch). It knows
// nothing of resources, versions or retries: that is the Reflector's.
//
//   KubeClient client(strand, endpoint);                      // throws ConfigError
//   KubeResponse page = co_await client.get("/api/v1/nodes?limit=500", 512 << 20);
//   auto [error, watch] = co_await client.watch("/api/v1/nodes?watch=1&...");
//   auto [read_error, bytes] = co_await watch->read(idle_timeout);
//   if (page.status != 200 && api_error(page).forbidden()) ...          // by status, never by text

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "webhook/kube/kube_config.h"

namespace kubegap {

using KubeStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
using KubeExecutor = boost::asio::strand<boost::asio::io_context::executor_type>;

// KubeResponse: a whole response. `error` is set when there is no HTTP answer at all.
struct KubeResponse {
  int status = 0;
  std::string body;
  std::string error;
};

// ApiError: why a request did not get the answer it wanted. Decide by `status` (0: no
// HTTP answer at all: connect, TLS, timeout, or the caller's own reason such as a
// cancelled scan), never by the words of `message` or text(): the API server's messages
// are for people and change between versions.
struct ApiError {
  int status = 0;
  std::string message;  // the transport error, or the message of the API server's Status

  // forbidden: RBAC said no (403). It stays so until someone changes a Role, so a caller
  // may leave the resource out instead of retrying.
  bool forbidden() const { return status == 403; }
  // text: "HTTP 403: <message>", "HTTP 500" without a message, or the transport error.
  std::string text() const;
};

// api_error: `response` as an error: its transport error, or its status with the
// `message` of the Status object the API server sends with an error status (the API
// conventions' "Response Status Kind", kubernetes/community
// contributors/devel/sig-architecture/api-conventions.md); a body without a kind is read
// as one, another kind's message is not the error's.
ApiError api_error(const KubeResponse& response);

// read_streamed_body: the next body bytes of a response whose header `parser` has read
// from `stream`, as they arrive, into `chunk`. A read can end having parsed only framing
// (a chunk's size line), so it reads again until there are body bytes or the body has
// ended. Returns {error, bytes}: bytes empty and no error when the body (or the
// connection) has ended; an error, never empty bytes, when a read fails. `before_read`
// runs before each read (the caller's timeout). Generic over the stream so tests can
// fail each read in turn (Beast's test::stream with a fail_count).
template <typename Stream, typename BeforeRead>
boost::asio::awaitable<std::pair<std::string, std::string_view>> read_streamed_body(
    Stream& stream, boost::beast::flat_buffer& buffer,
    boost::beast::http::response_parser<boost::beast::http::buffer_body>& parser, std::span<char> chunk,
    BeforeRead before_read) {
  namespace http = boost::beast::http;
  while (!parser.is_done()) {
    before_read();
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    // read_some, not read: read would wait for the whole chunk to fill.
    auto [ec, n] =
        co_await http::async_read_some(stream, buffer, parser, boost::asio::as_tuple(boost::asio::use_awaitable));
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::end_of_stream) break;
    if (ec) co_return std::pair{ec.message(), std::string_view()};
    const std::size_t got = chunk.size() - parser.get().body().size;
    if (got > 0) co_return std::pair{std::string(), std::string_view(chunk.data(), got)};
  }
  co_return std::pair{std::string(), std::string_view()};
}

// WatchResponse: a streamed response whose header has been read.
class WatchResponse {
 public:
  explicit WatchResponse(std::shared_ptr<KubeStream> stream);
  int status() const;
  // read: the next bytes of the body as they arrive (not a whole buffer's worth: a quiet
  // watch sends one small event at a time). Empty bytes and no error: the body has ended.
  // The bytes stay valid until the next read. A read silent for `idle_timeout` fails.
  boost::asio::awaitable<std::pair<std::string, std::string_view>> read(std::chrono::seconds idle_timeout);
  // cancel: ends a pending read (call on the client's executor).
  void cancel();

 private:
  friend class KubeClient;
  std::shared_ptr<KubeStream> stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::response_parser<boost::beast::http::buffer_body> parser_;
  std::array<char, 64 * 1024> chunk_{};
};

class KubeClient {
 public:
  KubeClient(KubeExecutor executor, KubeEndpoint endpoint);

  // get: GET `target`, the whole body (at most `body_limit` bytes).
  boost::asio::awaitable<KubeResponse> get(std::string target, std::size_t body_limit);
  // send: any verb, with a JSON `body` when it is not empty (create, update, delete).
  boost::asio::awaitable<KubeResponse> send(boost::beast::http::verb verb, std::string target, std::string body,
                                            std::size_t body_limit);
  // watch: GET `target` and read the response's header; on error the string says why.
  boost::asio::awaitable<std::pair<std::string, std::unique_ptr<WatchResponse>>> watch(std::string target);

 private:
  boost::asio::awaitable<std::pair<std::string, std::shared_ptr<KubeStream>>> connect();

  KubeExecutor executor_;
  KubeEndpoint endpoint_;
  boost::asio::ssl::context tls_;
};

// KubeRequester: one request to the API server, answered whole: KubeClient::send's
// contract (verb, target, JSON body or empty, body limit). The scan and the background
// audit are written against it, so tests script the API server's answers without sockets.
using KubeRequester = std::function<boost::asio::awaitable<KubeResponse>(
    boost::beast::http::verb verb, std::string target, std::string body, std::size_t body_limit)>;

// requester_of: requests through `client`, which must outlive the requester.
KubeRequester requester_of(KubeClient& client);

// KubeGetter: one GET to the API server, answered whole (target, body limit). What only
// reads the cluster (`scan`, the MCP server) is written against this, not KubeRequester:
// no other verb exists on that path, so it cannot write whatever its credentials allow.
using KubeGetter = std::function<boost::asio::awaitable<KubeResponse>(std::string target, std::size_t body_limit)>;

// getter_of: GETs through `client`, which must outlive the getter.
KubeGetter getter_of(KubeClient& client);
// getter_of: the GETs of `send` (the background audit, which also writes reports).
KubeGetter getter_of(KubeRequester send);

// fresh_client_requester: each request through a KubeClient of its own, so its TLS
// context is made anew: a long-running caller that sends a few requests a minute picks up
// a rotated CA (the token file is re-read on every connection anyway). A CA that no longer
// loads fails that request (`error`) instead of throwing.
KubeRequester fresh_client_requester(KubeExecutor executor, KubeEndpoint endpoint);

// make_client_tls_context: trust the endpoint's CA (or the system store), present its
// client certificate; throws ConfigError.
boost::asio::ssl::context make_client_tls_context(const KubeEndpoint& endpoint);

// url_encode: for continue tokens and resource versions in query strings.
std::string url_encode(std::string_view text);

}  // namespace kubegap
