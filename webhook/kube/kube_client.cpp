#include "webhook/kube/kube_client.h"

#include <openssl/ssl.h>
#include <rapidjson/document.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <exception>
#include <optional>

#include "webhook/core/errors.h"
#include "webhook/core/json_reader.h"

namespace kubegap {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto kAwait = net::as_tuple(net::use_awaitable);

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

http::request<http::string_body> make_request(const KubeEndpoint& endpoint, http::verb verb, const std::string& target,
                                              std::string body = {}) {
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, endpoint.host.find(':') == std::string::npos ? endpoint.host : "[" + endpoint.host + "]");
  req.set(http::field::user_agent, "kubegap-webhook");
  req.set(http::field::accept, "application/json");
  if (const auto token = endpoint.bearer_token(); !token.empty()) {
    req.set(http::field::authorization, "Bearer " + token);
  }
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

// send_on_fresh_client: fresh_client_requester's request. A free function taking its
// arguments by value: the coroutine frame owns them, whatever becomes of the requester.
net::awaitable<KubeResponse> send_on_fresh_client(KubeExecutor executor, KubeEndpoint endpoint, http::verb verb,
                                                  std::string target, std::string body, std::size_t body_limit) {
  KubeResponse out;
  std::optional<KubeClient> client;
  try {
    client.emplace(std::move(executor), std::move(endpoint));
  } catch (const std::exception& e) {  // the client's TLS context (a CA that no longer loads)
    out.error = e.what();
  }
  if (!client) co_return out;
  bool failed = false;
  try {
    out = co_await client->send(verb, std::move(target), std::move(body), body_limit);
  } catch (const std::exception&) {
    failed = true;
  }
  if (failed) {
    out = KubeResponse{};
    out.error = "request failed";
  }
  co_return out;
}

}  // namespace

std::string ApiError::text() const {
  if (status == 0) return message;
  return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

ApiError api_error(const KubeResponse& response) {
  if (!response.error.empty()) return {0, response.error};
  // A body of another kind (or none) carries no message; a missing kind is read as
  // Status, as the scan always has.
  std::string message;
  rapidjson::Document doc;
  doc.Parse(response.body.data(), response.body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    const std::string kind = JsonReader::string_member(&doc, "kind");
    if (kind.empty() || kind == "Status") message = JsonReader::string_member(&doc, "message");
  }
  return {response.status, std::move(message)};
}

KubeRequester requester_of(KubeClient& client) {
  return [&client](http::verb verb, std::string target, std::string body, std::size_t body_limit) {
    return client.send(verb, std::move(target), std::move(body), body_limit);
  };
}

KubeGetter getter_of(KubeClient& client) {
  return [&client](std::string target, std::size_t body_limit) { return client.get(std::move(target), body_limit); };
}

KubeGetter getter_of(KubeRequester send) {
  return [send = std::move(send)](std::string target, std::size_t body_limit) {
    return send(http::verb::get, std::move(target), {}, body_limit);
  };
}

KubeRequester fresh_client_requester(KubeExecutor executor, KubeEndpoint endpoint) {
  return [executor = std::move(executor), endpoint = std::move(endpoint)](http::verb verb, std::string target,
                                                                          std::string body, std::size_t body_limit) {
    return send_on_fresh_client(executor, endpoint, verb, std::move(target), std::move(body), body_limit);
  };
}

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

KubeClient::KubeClient(KubeExecutor executor, KubeEndpoint endpoint)
    : executor_(std::move(executor)), endpoint_(std::move(endpoint)), tls_(make_client_tls_context(endpoint_)) {}

net::awaitable<std::pair<std::string, std::shared_ptr<KubeStream>>> KubeClient::connect() {
  auto stream = std::make_shared<KubeStream>(executor_, tls_);
  tcp::resolver resolver(executor_);
  auto [ec, results] = co_await resolver.async_resolve(endpoint_.host, endpoint_.port, kAwait);
  if (ec) co_return std::pair{"connect: " + ec.message(), nullptr};
  auto& lowest = beast::get_lowest_layer(*stream);
  lowest.expires_after(std::chrono::seconds(10));
  auto [connect_ec, ep] = co_await lowest.async_connect(results, kAwait);
  if (connect_ec) co_return std::pair{"connect: " + connect_ec.message(), nullptr};
  if (!is_ip_address(endpoint_.host)) SSL_set_tlsext_host_name(stream->native_handle(), endpoint_.host.c_str());
  if (!endpoint_.insecure_skip_verify) stream->set_verify_callback(ssl::host_name_verification(endpoint_.host));
  auto [hs_ec] = co_await stream->async_handshake(ssl::stream_base::client, kAwait);
  if (hs_ec) co_return std::pair{"connect: " + hs_ec.message(), nullptr};
  co_return std::pair{std::string(), stream};
}

net::awaitable<KubeResponse> KubeClient::get(std::string target, std::size_t body_limit) {
  return send(http::verb::get, std::move(target), {}, body_limit);
}

net::awaitable<KubeResponse> KubeClient::send(http::verb verb, std::string target, std::string body,
                                              std::size_t body_limit) {
  KubeResponse out;
  auto [error, stream] = co_await connect();
  if (!error.empty()) {
    out.error = std::move(error);
    co_return out;
  }
  beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(60));
  auto req = make_request(endpoint_, verb, target, std::move(body));
  if (auto [write_ec, n] = co_await http::async_write(*stream, req, kAwait); write_ec) {
    out.error = "request: " + write_ec.message();
    co_return out;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit);
  if (auto [read_ec, n] = co_await http::async_read(*stream, buffer, parser, kAwait); read_ec) {
    out.error = "response: " + read_ec.message();
    co_return out;
  }
  out.status = static_cast<int>(parser.get().result_int());  // an HTTP status: 3 digits
  out.body = std::move(parser.get().body());
  beast::error_code ignored;
  beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return out;
}

net::awaitable<std::pair<std::string, std::unique_ptr<WatchResponse>>> KubeClient::watch(std::string target) {
  auto [error, stream] = co_await connect();
  if (!error.empty()) co_return std::pair{std::move(error), nullptr};
  auto response = std::make_unique<WatchResponse>(stream);
  beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(30));
  auto req = make_request(endpoint_, http::verb::get, target);
  if (auto [write_ec, n] = co_await http::async_write(*stream, req, kAwait); write_ec) {
    co_return std::pair{"request: " + write_ec.message(), nullptr};
  }
  response->parser_.body_limit(boost::none);  // a watch streams for minutes
  if (auto [header_ec, n] = co_await http::async_read_header(*stream, response->buffer_, response->parser_, kAwait);
      header_ec) {
    co_return std::pair{"response: " + header_ec.message(), nullptr};
  }
  co_return std::pair{std::string(), std::move(response)};
}

WatchResponse::WatchResponse(std::shared_ptr<KubeStream> stream) : stream_(std::move(stream)) {}

int WatchResponse::status() const { return static_cast<int>(parser_.get().result_int()); }

net::awaitable<std::pair<std::string, std::string_view>> WatchResponse::read(std::chrono::seconds idle_timeout) {
  co_return co_await read_streamed_body(*stream_, buffer_, parser_, chunk_,
                                        [&] { beast::get_lowest_layer(*stream_).expires_after(idle_timeout); });
}

void WatchResponse::cancel() { beast::get_lowest_layer(*stream_).cancel(); }

}  // namespace kubegap
