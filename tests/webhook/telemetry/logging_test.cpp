// log_event: fields carry request text; a huge one is cut, so one request cannot write
// megabytes of log (found by the abuse tests: a 4 MiB uid was logged whole).
#include "webhook/telemetry/logging.h"

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace kubegap {
namespace {

// captured_fields: what log_event writes in `format` for these fields, through a logger on
// a string stream.
std::string captured_fields(LogFormat format, std::initializer_list<LogField> fields) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  configure_logging("info", format);
  auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  log_event(spdlog::level::info, "review", fields);
  spdlog::set_default_logger(previous);
  configure_logging("info", LogFormat::kText);  // the other tests' format
  return out.str();
}

// captured: the line of a review's uid and kind.
std::string captured(LogFormat format, const std::string& value) {
  return captured_fields(format, {{"uid", value}, {"kind", "Pod"}});
}

TEST(LogEvent, CutsAHugeFieldAndSaysHowLongItWas) {
  const std::string uid(4 << 20, 'u');
  for (const auto format : {LogFormat::kText, LogFormat::kJson}) {
    const std::string line = captured(format, uid);
    EXPECT_LT(line.size(), 1024u);
    EXPECT_NE(line.find("...(4194304 bytes)"), std::string::npos) << line;
    EXPECT_NE(line.find("Pod"), std::string::npos) << "the other fields are kept";
  }
}

TEST(LogEvent, KeepsOrdinaryFieldsWholeAndCutsOnACharacterBoundary) {
  EXPECT_NE(captured(LogFormat::kText, "0f4e1b6a-3c1d").find("uid=0f4e1b6a-3c1d"), std::string::npos);
  // 511 ASCII bytes, then two-byte characters: the cut at 512 falls inside one.
  std::string value(511, 'a');
  for (int i = 0; i < 10; ++i) value += "\xC3\xA9";
  const std::string line = captured(LogFormat::kJson, value);
  EXPECT_NE(line.find(std::string(511, 'a') + "...(531 bytes)"), std::string::npos) << line;
}

// The JSON line is written by hand, into a buffer the thread reuses: it must be what
// RapidJSON's Writer wrote before (the oracle here), byte for byte, for text that needs
// escaping (quotes, backslashes, control bytes, a slash, UTF-8) and for raw numbers.
TEST(LogEvent, JsonLinesAreWhatRapidJsonsWriterWrites) {
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte += static_cast<char>(c);
  const std::string value = "a \"quoted\" \\ path/\x01\x1f\t\n caf\xC3\xA9 " + every_byte.substr(0, 127);
  const std::string line = captured_fields(
      LogFormat::kJson, {{"code", "200", false}, {"uid", value}, {"k\"ey", ""}, {"latency_us", "17", false}});
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("msg");
  w.String("review");
  w.Key("code");
  w.RawValue("200", 3, rapidjson::kNumberType);
  w.Key("uid");
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  w.Key("k\"ey");
  w.String("");
  w.Key("latency_us");
  w.RawValue("17", 2, rapidjson::kNumberType);
  w.EndObject();
  const std::string expected(buffer.GetString() + 1, buffer.GetSize() - 2);
  EXPECT_EQ(line, expected + "\n");
  // A second line on the same thread starts afresh (the buffer is reused).
  EXPECT_EQ(captured_fields(LogFormat::kJson, {{"uid", "x"}}), "\"msg\":\"review\",\"uid\":\"x\"\n");
}

TEST(LogEvent, TextLinesQuoteWhatNeedsIt) {
  EXPECT_EQ(captured_fields(LogFormat::kText, {{"code", "200", false}, {"uid", "a b\"c\x01"}, {"kind", ""}}),
            "review code=200 uid=\"a b\\\"c?\" kind=\"\"\n");
}

}  // namespace
}  // namespace kubegap
