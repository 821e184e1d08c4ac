// log_event: fields carry request text; a huge one is cut, so one request cannot write
// megabytes of log (found by the abuse tests: a 4 MiB uid was logged whole).
#include "webhook/telemetry/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace kubegap {
namespace {

// captured: what log_event writes in `format`, through a logger on a string stream.
std::string captured(LogFormat format, const std::string& value) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  configure_logging("info", format);
  auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  log_event(spdlog::level::info, "review", {{"uid", value}, {"kind", "Pod"}});
  spdlog::set_default_logger(previous);
  configure_logging("info", LogFormat::kText);  // the other tests' format
  return out.str();
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

}  // namespace
}  // namespace kubegap
