#pragma once
// Small helpers shared by the webhook and health listeners.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "webhook/core/errors.h"

namespace kubegap {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

inline HttpResponse make_response(unsigned version, boost::beast::http::status status, std::string body,
                                  std::string_view content_type) {
  HttpResponse response{status, version};
  response.set(boost::beast::http::field::server, "kubegap-webhook");
  response.set(boost::beast::http::field::content_type, content_type);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

// without_body_for_head: a response to HEAD carries the headers only; a body would be
// read as the start of the next response on a kept-alive connection.
inline void without_body_for_head(boost::beast::http::verb method, HttpResponse& response) {
  if (method != boost::beast::http::verb::head) return;
  response.body().clear();
  response.content_length(0);
}

// path_of: the target without its query string (the API server adds ?timeout=10s).
inline std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// open_listener: opens, binds and listens on `endpoint`. A failure names the address, the
// flag that set it and what to do (a port in use is the common case), instead of a
// Boost error with source locations.
inline void open_listener(boost::asio::ip::tcp::acceptor& acceptor, const boost::asio::ip::tcp::endpoint& endpoint,
                          std::string_view flag, int backlog) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(backlog, ec);
  if (!ec) return;
  std::string hint;
  if (ec == boost::asio::error::address_in_use) {
    hint = ": another process is using the port; stop it, or choose another with " + std::string(flag) + " HOST:PORT";
  } else if (ec == boost::asio::error::access_denied) {
    hint = ": ports below 1024 need privileges; choose another with " + std::string(flag) + " HOST:PORT";
  } else if (ec == boost::system::errc::address_not_available) {
    hint = ": no local interface has that address; use one of this machine's addresses in " + std::string(flag);
  }
  throw ConfigError("cannot listen on " + endpoint.address().to_string() + ":" + std::to_string(endpoint.port()) +
                    " (" + std::string(flag) + "): " + ec.message() + hint);
}

}  // namespace kubegap
