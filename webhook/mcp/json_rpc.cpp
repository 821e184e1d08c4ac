#include "webhook/mcp/json_rpc.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace kubegap {
namespace {

RpcParse invalid(std::string message, std::string id = "null") {
  return RpcParse{std::nullopt, RpcError{rpc_code::kInvalidRequest, std::move(message), {}, std::move(id)}};
}

// quoted: `text` as a JSON string.
std::string json_string(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace

const rapidjson::Value* RpcMessage::params() const {
  const auto found = body.FindMember("params");
  return found != body.MemberEnd() && found->value.IsObject() ? &found->value : nullptr;
}

std::string to_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  value.Accept(w);
  return {buffer.GetString(), buffer.GetSize()};
}

RpcParse parse_rpc_line(std::string_view line) {
  RpcMessage m;
  // Invalid UTF-8 is a parse error: a string echoed in an error must not break stdout's JSON.
  m.body.Parse<rapidjson::kParseValidateEncodingFlag>(line.data(), line.size());
  if (m.body.HasParseError()) {
    return RpcParse{std::nullopt,
                    RpcError{rpc_code::kParseError,
                             std::string("parse error: not JSON at offset ") + std::to_string(m.body.GetErrorOffset()) +
                                 ": " + rapidjson::GetParseError_En(m.body.GetParseError()),
                             {},
                             "null"}};
  }
  if (m.body.IsArray()) return invalid("invalid request: batches are not supported (removed in MCP 2025-06-18)");
  if (!m.body.IsObject()) return invalid("invalid request: a message is a JSON object");
  // The id first: an error about the rest can then name the request it answers.
  if (const auto id = m.body.FindMember("id"); id != m.body.MemberEnd()) {
    if (!id->value.IsString() && !id->value.IsInt64()) {
      return invalid("invalid request: \"id\" must be a string or an integer");
    }
    m.id = to_json(id->value);
  }
  const auto version = m.body.FindMember("jsonrpc");
  if (version == m.body.MemberEnd() || !version->value.IsString() ||
      std::string_view(version->value.GetString()) != "2.0") {
    return invalid("invalid request: \"jsonrpc\" must be \"2.0\"", m.id.empty() ? "null" : m.id);
  }
  const auto method = m.body.FindMember("method");
  if (method != m.body.MemberEnd()) {
    if (!method->value.IsString() || method->value.GetStringLength() == 0) {
      return invalid("invalid request: \"method\" must be a non-empty string", m.id.empty() ? "null" : m.id);
    }
    m.method = method->value.GetString();
    const auto params = m.body.FindMember("params");
    if (params != m.body.MemberEnd() && !params->value.IsObject()) {
      return invalid("invalid request: \"params\" must be an object", m.id.empty() ? "null" : m.id);
    }
  } else if (m.id.empty() || (!m.body.HasMember("result") && !m.body.HasMember("error"))) {
    return invalid("invalid request: no \"method\"", m.id.empty() ? "null" : m.id);
  }
  return RpcParse{std::move(m), std::nullopt};
}

std::string rpc_result_line(const std::string& id, std::string_view result_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id;
  out += R"(,"result":)";
  out += result_json;
  out += '}';
  return out;
}

std::string rpc_error_line(const RpcError& error) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += error.id;
  out += R"(,"error":{"code":)";
  out += std::to_string(error.code);
  out += R"(,"message":)";
  out += json_string(error.message);
  if (!error.data.empty()) {
    out += R"(,"data":)";
    out += error.data;
  }
  out += "}}";
  return out;
}

std::string rpc_request_line(const std::string& id, std::string_view method, std::string_view params_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id;
  out += R"(,"method":)";
  out += json_string(method);
  out += R"(,"params":)";
  out += params_json;
  out += '}';
  return out;
}

}  // namespace kubegap
