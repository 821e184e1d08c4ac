// JSON-RPC lines: what is a request, a notification, a response, and the error each bad
// line gets; argument checking against a tool's inputSchema, naming the field.
#include "webhook/mcp/json_rpc.h"

#include <gtest/gtest.h>

#include "webhook/mcp/argument_schema.h"

namespace {

using kubegap::check_arguments;
using kubegap::parse_rpc_line;
namespace rpc_code = kubegap::rpc_code;

int error_code(std::string_view line) {
  const auto parsed = parse_rpc_line(line);
  return parsed.error ? parsed.error->code : 0;
}

TEST(ParseRpcLine, RequestsNotificationsAndResponses) {
  const auto request = parse_rpc_line(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}})");
  ASSERT_TRUE(request.message);
  EXPECT_TRUE(request.message->is_request());
  EXPECT_EQ(request.message->id, "7");
  EXPECT_NE(request.message->params(), nullptr);

  const auto string_id = parse_rpc_line(R"({"jsonrpc":"2.0","id":"a\"b","method":"ping"})");
  ASSERT_TRUE(string_id.message);
  EXPECT_EQ(string_id.message->id, R"("a\"b")");  // kept as JSON, echoed as given
  EXPECT_EQ(string_id.message->params(), nullptr);

  const auto notification = parse_rpc_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(notification.message);
  EXPECT_TRUE(notification.message->is_notification());

  const auto response = parse_rpc_line(R"({"jsonrpc":"2.0","id":"r1","result":{"roots":[]}})");
  ASSERT_TRUE(response.message);
  EXPECT_TRUE(response.message->is_response());
}

TEST(ParseRpcLine, EachBadLineGetsItsError) {
  EXPECT_EQ(error_code("not json"), rpc_code::kParseError);
  EXPECT_EQ(error_code(R"({"jsonrpc":"2.0","id":1,"method":"x")"), rpc_code::kParseError);  // cut short
  EXPECT_EQ(error_code("[1,2]"), rpc_code::kInvalidRequest);                                // a batch
  EXPECT_EQ(error_code("42"), rpc_code::kInvalidRequest);
  EXPECT_EQ(error_code(R"({"id":1,"method":"ping"})"), rpc_code::kInvalidRequest);  // no jsonrpc
  EXPECT_EQ(error_code(R"({"jsonrpc":"1.0","id":1,"method":"ping"})"), rpc_code::kInvalidRequest);
  EXPECT_EQ(error_code(R"({"jsonrpc":"2.0","id":1})"), rpc_code::kInvalidRequest);  // neither method nor result
  EXPECT_EQ(error_code(R"({"jsonrpc":"2.0","id":1,"method":3})"), rpc_code::kInvalidRequest);
  EXPECT_EQ(error_code(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"), rpc_code::kInvalidRequest);
  EXPECT_EQ(error_code(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})"), rpc_code::kInvalidRequest);
  // Invalid UTF-8 would be echoed into an error and break stdout's JSON: a parse error.
  EXPECT_EQ(error_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}"), rpc_code::kParseError);
  // The id is echoed when it could be read, so the client can match the error.
  EXPECT_EQ(parse_rpc_line(R"({"jsonrpc":"2.0","id":9,"method":""})").error->id, "9");
  EXPECT_EQ(parse_rpc_line("nope").error->id, "null");
}

TEST(RpcLines, StayOnOneLine) {
  const std::string error = kubegap::rpc_error_line({rpc_code::kInvalidParams, "line one\nline two", "", "3"});
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(error, R"({"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"line one\nline two"}})");
  EXPECT_EQ(kubegap::rpc_result_line("\"x\"", "{}"), R"({"jsonrpc":"2.0","id":"x","result":{}})");
}

rapidjson::Document json(const char* text) {
  rapidjson::Document d;
  d.Parse(text);
  return d;
}

TEST(CheckArguments, NamesTheFirstFieldThatIsWrong) {
  const auto schema = json(R"({"type":"object","additionalProperties":false,"required":["id"],"properties":{
      "id":{"type":"string","enum":["a","b"]},
      "kinds":{"type":"array","minItems":1,"items":{"type":"string","enum":["Pod","Job"]}},
      "limit":{"type":"integer","minimum":1,"maximum":10}}})");
  const auto wrong = [&](const char* arguments) {
    const auto error = check_arguments(json(arguments), schema);
    return error ? error->field + " | " + error->message : std::string("ok");
  };
  EXPECT_EQ(wrong(R"({"id":"a"})"), "ok");
  EXPECT_EQ(wrong(R"({"id":"b","kinds":["Job","Pod"],"limit":10})"), "ok");
  EXPECT_EQ(wrong(R"({})"), "id | arguments.id: required");
  EXPECT_EQ(wrong(R"({"id":42})"), "id | arguments.id: must be string, not a number");
  EXPECT_EQ(wrong(R"({"id":"c"})"), R"(id | arguments.id: "c" is not one of "a", "b")");
  EXPECT_EQ(wrong(R"({"id":"a","kinds":["Pod","Foo"]})"),
            R"(kinds[1] | arguments.kinds[1]: "Foo" is not one of "Pod", "Job")");
  EXPECT_EQ(wrong(R"({"id":"a","kinds":[]})"), "kinds | arguments.kinds: needs at least 1 item(s)");
  EXPECT_EQ(wrong(R"({"id":"a","limit":0})"), "limit | arguments.limit: must be at least 1");
  EXPECT_EQ(wrong(R"({"id":"a","limit":11})"), "limit | arguments.limit: must be at most 10");
  EXPECT_EQ(wrong(R"({"id":"a","limit":1.5})"), "limit | arguments.limit: must be integer, not a number");
  EXPECT_EQ(wrong(R"({"id":"a","limit":10.0})"), "ok");  // JSON Schema: an integer may be written 10.0
  EXPECT_EQ(wrong(R"({"id":"a","limit":0.0})"), "limit | arguments.limit: must be at least 1");
  EXPECT_EQ(wrong(R"({"id":"a","extra":true})"),
            "extra | arguments.extra: unknown argument (see the tool's inputSchema)");
  EXPECT_EQ(wrong(R"([])"), " | arguments: must be object, not an array");
}

}  // namespace
