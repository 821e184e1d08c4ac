#pragma once
// Small helpers shared by the webhook and health listeners.

#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

namespace kubegap {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

inline HttpResponse make_response(unsigned version, boost::beast::http::status status,
                                  std::string body, std::string_view content_type) {
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
inline std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace kubegap
