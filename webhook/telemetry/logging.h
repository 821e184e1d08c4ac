#pragma once
// Logging: spdlog to stderr, as text ("msg key=value ...") or as one JSON object per line
// for log pipelines. Fields are escaped in both formats.

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace kubegap {

enum class LogFormat { kText, kJson };

// configure_logging: level is trace|debug|info|warn|error|off; false if unknown. Lines
// are written in batches (every second; warnings and errors at once): flush_logs() writes
// what is pending, e.g. after "serving" so that whoever waits for it sees it.
bool configure_logging(std::string_view level, LogFormat format);

// A field's value is a view: log_event writes the line before it returns, so a
// temporary given in its field list (`std::to_string(status)`) lives long enough.
struct LogField {
  std::string_view key;
  std::string_view value;
  bool quoted = true;  // false for numbers
};

// log_event: one line with a message and fields, in the configured format.
void log_event(spdlog::level::level_enum level, std::string_view message, std::initializer_list<LogField> fields = {});

void flush_logs();

}  // namespace kubegap
