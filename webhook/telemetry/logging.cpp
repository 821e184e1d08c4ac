#include "webhook/telemetry/logging.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>

namespace kubegap {
namespace {

LogFormat g_format = LogFormat::kText;

// BufferedStderrSink: lines are collected in memory and written to stderr in batches, one
// write(2) per 64 KiB or per flush (every second, at once for warnings and errors, and at
// exit), instead of a write and a flush per review. The cost: a crash loses at most the
// last second of info lines.
class BufferedStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Whatever way the process ends normally (an exception out of serve included), the
  // pending lines are written: spdlog does not flush a sink it destroys.
  ~BufferedStderrSink() override { flush_(); }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    buffer_.append(formatted.data(), formatted.size());
    if (buffer_.size() >= kBatchBytes) flush_();
  }

  void flush_() override {
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(STDERR_FILENO, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr closed (or non-blocking and full): drop the batch
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kBatchBytes = 64 * 1024;
  std::string buffer_;
};

// clip: a field no longer than kMaxFieldBytes. Fields carry request text (a review's
// uid, names): one request must not write megabytes of log. Cut on a UTF-8 boundary.
constexpr std::size_t kMaxFieldBytes = 512;
LogField clip(const LogField& field) {
  std::size_t cut = kMaxFieldBytes;
  while (cut > 0 && (static_cast<unsigned char>(field.value[cut]) & 0xC0) == 0x80) --cut;
  return {field.key, field.value.substr(0, cut) + "...(" + std::to_string(field.value.size()) + " bytes)", true};
}

// text_value: quotes values with spaces, quotes or control characters, logfmt style.
std::string text_value(const LogField& field) {
  const bool plain =
      !field.value.empty() && field.value.find_first_of(" \"=\\") == std::string::npos &&
      std::none_of(field.value.begin(), field.value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
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
  auto logger = std::make_shared<spdlog::logger>("kubegap", std::make_shared<BufferedStderrSink>());
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  logger->flush_on(spdlog::level::warn);
  spdlog::flush_every(std::chrono::seconds(1));  // spdlog 1.10 counts in seconds
  if (format == LogFormat::kJson) {
    // log_event renders the fields; the pattern adds time and level around them.
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %v", spdlog::pattern_time_type::utc);
  }
  return true;
}

void log_event(spdlog::level::level_enum level, std::string_view message, std::initializer_list<LogField> fields) {
  if (!spdlog::should_log(level)) return;
  std::string line;
  if (g_format == LogFormat::kJson) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();  // written as members only: the pattern supplies the braces
    w.Key("msg");
    w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
    LogField clipped;
    for (const auto& given : fields) {
      const LogField& field = given.value.size() <= kMaxFieldBytes ? given : (clipped = clip(given));
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
    for (const auto& field : fields) {
      line +=
          " " + std::string(field.key) + "=" + text_value(field.value.size() <= kMaxFieldBytes ? field : clip(field));
    }
  }
  spdlog::log(level, "{}", line);
}

void flush_logs() { spdlog::default_logger()->flush(); }

}  // namespace kubegap
