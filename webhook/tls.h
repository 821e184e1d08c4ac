#pragma once
// The server's TLS settings: TLS 1.2 minimum (1.3 preferred by OpenSSL's negotiation),
// AEAD-only suites for 1.2, ALPN selecting http/1.1.

#include <string>

#include <boost/asio/ssl/context.hpp>

namespace kubegap {

// make_server_tls_context: loads the certificate chain and key; throws ConfigError with
// the file name and OpenSSL's reason when they cannot be used.
boost::asio::ssl::context make_server_tls_context(const std::string& cert_file,
                                                  const std::string& key_file);

}  // namespace kubegap
