#include "webhook/logging.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace kubegap {
namespace {

LogFormat g_format = LogFormat::kText;

// text_value: quotes values with spaces, quotes or control characters, logfmt style.
std::string text_value(const LogField& field) {
  const bool plain = !field.value.empty() &&
                     field.value.find_first_of(" \"=\\") == std::string::npos &&
                     std::none_of(field.value.begin(), field.value.end(),
                                  [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (plain || !field.quoted) return field.value;
  std::string out = "\"";
  for (const char c : field.value) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

bool configure_logging(std::string_view level, LogFormat format) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") return false;
  g_format = format;
  auto logger = spdlog::stderr_logger_mt("kubegap");
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  if (format == LogFormat::kJson) {
    // log_event renders the fields; the pattern adds time and level around them.
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %v", spdlog::pattern_time_type::utc);
  }
  return true;
}

void log_event(spdlog::level::level_enum level, std::string_view message,
               std::initializer_list<LogField> fields) {
  if (!spdlog::should_log(level)) return;
  std::string line;
  if (g_format == LogFormat::kJson) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();  // written as members only: the pattern supplies the braces
    w.Key("msg");
    w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
    for (const auto& field : fields) {
      w.Key(field.key.data(), static_cast<rapidjson::SizeType>(field.key.size()));
      if (field.quoted) {
        w.String(field.value.data(), static_cast<rapidjson::SizeType>(field.value.size()));
      } else {
        w.RawValue(field.value.data(), field.value.size(), rapidjson::kNumberType);
      }
    }
    w.EndObject();
    line.assign(buffer.GetString() + 1, buffer.GetSize() - 2);  // strip the outer braces
  } else {
    line = message;
    for (const auto& field : fields) line += " " + std::string(field.key) + "=" + text_value(field);
  }
  spdlog::log(level, "{}", line);
}

}  // namespace kubegap
