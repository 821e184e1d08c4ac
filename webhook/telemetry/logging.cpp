#include "webhook/telemetry/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>

#include "policies/text.h"
#include "webhook/core/admission_codec.h"

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

// clipped: a field's value no longer than kMaxFieldBytes, in `out` when it must be cut.
// Fields carry request text (a review's uid, names): one request must not write
// megabytes of log. Cut on a UTF-8 boundary.
constexpr std::size_t kMaxFieldBytes = 512;
std::string_view clipped(std::string_view value, std::string& out) {
  if (value.size() <= kMaxFieldBytes) return value;
  std::size_t cut = kMaxFieldBytes;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  out = concat({value.substr(0, cut), "...(", Decimal(static_cast<std::int64_t>(value.size())).view(), " bytes)"});
  return out;
}

// append_text_value: the value logfmt style, quoted when it has spaces, quotes or
// control characters (a number never is).
void append_text_value(std::string& out, std::string_view value, bool quoted) {
  const bool plain =
      !value.empty() && value.find_first_of(" \"=\\") == std::string_view::npos &&
      std::none_of(value.begin(), value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (plain || !quoted) {
    out += value;
    return;
  }
  out += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  }
  out += '"';
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
  // Reused by the thread: a line is written for every review.
  thread_local std::string line;
  std::string cut;  // a field's value when it is clipped
  line.clear();
  if (g_format == LogFormat::kJson) {
    // Members only, as RapidJSON's Writer wrote them: the pattern supplies the braces.
    line += R"("msg":)";
    append_json_string(line, message);
    for (const auto& field : fields) {
      line += ',';
      append_json_string(line, field.key);
      line += ':';
      const std::string_view value = clipped(field.value, cut);
      if (field.quoted) {
        append_json_string(line, value);
      } else {
        line += value;
      }
    }
  } else {
    line += message;
    for (const auto& field : fields) {
      line += ' ';
      line += field.key;
      line += '=';
      append_text_value(line, clipped(field.value, cut), field.quoted);
    }
  }
  spdlog::log(level, "{}", line);
}

void flush_logs() { spdlog::default_logger()->flush(); }

}  // namespace kubegap
