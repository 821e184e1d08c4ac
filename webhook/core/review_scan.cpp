#include "webhook/core/review_scan.h"

#include <rapidjson/reader.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "policies/text.h"
#include "webhook/core/json_string_scan.h"

namespace kubegap {
namespace {

using rapidjson::SizeType;

// Place: what the value being read is to the decoder, which decides what of it is kept.
enum class Place : std::uint8_t {
  kSkipped,      // nothing of it is kept
  kRoot,         // the envelope: apiVersion, kind, request
  kRequest,      // request: its fields the handler reads, and object
  kRequestKind,  // request.kind: group, version, kind
  kScalar,       // the envelope wants a string or a boolean here
  kObject,       // request.object: everything but its status
  kMetadata,     // a metadata inside it: everything but managedFields
  kAnnotations,  // annotations inside it: everything but last-applied-configuration
  kOther,        // anything else inside it: everything
};

bool is_generic(Place p) { return p == Place::kOther || p == Place::kMetadata || p == Place::kAnnotations; }

// member_place: the place of the member `key` of a kept object at `parent`.
Place member_place(Place parent, std::string_view key) {
  switch (parent) {
    case Place::kRoot:
      if (key == "apiVersion" || key == "kind") return Place::kScalar;
      return key == "request" ? Place::kRequest : Place::kSkipped;
    case Place::kRequest:
      if (key == "uid" || key == "subResource" || key == "operation" || key == "namespace" || key == "name" ||
          key == "dryRun") {
        return Place::kScalar;
      }
      if (key == "kind") return Place::kRequestKind;
      return key == "object" ? Place::kObject : Place::kSkipped;
    case Place::kRequestKind:
      return key == "group" || key == "version" || key == "kind" ? Place::kScalar : Place::kSkipped;
    case Place::kObject:
      if (key == "status") return Place::kSkipped;
      break;
    case Place::kMetadata:
      if (key == "managedFields") return Place::kSkipped;
      break;
    case Place::kAnnotations:
      if (key == "kubectl.kubernetes.io/last-applied-configuration") return Place::kSkipped;
      break;
    default:
      break;
  }
  if (key == "metadata") return Place::kMetadata;
  if (key == "annotations") return Place::kAnnotations;
  return Place::kOther;
}

// TokenNumber: RapidJSON's reader on one number token that is not a plain integer of at
// most 18 digits (a fraction, an exponent, a long integer): its conversion and its
// "number too big" are then exactly the reader's. The value goes on to `document`.
struct TokenNumber : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TokenNumber> {
  ReviewDocument* document;
  explicit TokenNumber(ReviewDocument* d) : document(d) {}
  bool Default() { return false; }  // nothing but a number can come of a number token
  bool Int(int i) { return document == nullptr || document->Int(i); }
  bool Uint(unsigned u) { return document == nullptr || document->Uint(u); }
  bool Int64(std::int64_t i) { return document == nullptr || document->Int64(i); }
  bool Uint64(std::uint64_t u) { return document == nullptr || document->Uint64(u); }
  bool Double(double d) { return document == nullptr || document->Double(d); }
};

// Frame: an open container, two bytes (a body of 8 MiB of '[' opens 8 Mi of them).
// The count of kept members or elements of a kept one is in the count stack.
struct Frame {
  Place place;  // kSkipped when nothing of it is built
  bool array;
};

thread_local std::vector<Frame> t_frames;
thread_local std::vector<SizeType> t_counts;

// space: the first byte at or after `p` that is not JSON whitespace. The API server
// writes compact JSON: most calls find a token at once.
template <typename Char>
Char* space(Char* p) {
  if (static_cast<unsigned char>(*p) > ' ') return p;
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') ++p;
  return p;
}

// literal: what follows `word` at `p`, or nullptr. Compared byte by byte from the start:
// a shorter text ends in its NUL first.
template <std::size_t N>
char* literal(char* p, const char (&word)[N]) {
  for (std::size_t i = 0; i + 1 < N; ++i) {
    if (p[i] != word[i]) return nullptr;
  }
  return p + N - 1;
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// The scan works on a local position: each step takes the position and returns the next
// (nullptr when the text is not JSON), so the position stays in a register through the
// loop rather than in memory behind every call.
class Scanner {
 public:
  // The frame stacks are the thread's, reused scan after scan (one is run at a time).
  Scanner(char* text, std::size_t size, ReviewDocument& document, const ReserveKept& reserve)
      : text_(text), end_(text + size), document_(document), reserve_(reserve), frames_(t_frames), counts_(t_counts) {
    frames_.clear();
    counts_.clear();
  }
  ~Scanner() {
    // A deeply nested body's stacks are not kept for the next.
    if (frames_.capacity() > kFramesKept) std::vector<Frame>().swap(frames_);
    if (counts_.capacity() > kFramesKept) std::vector<SizeType>().swap(counts_);
  }
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  ReviewScan run() {
    const char* const p = scan(space(text_));
    if (over_budget_) return ReviewScan::kOverBudget;
    if (p == nullptr) return ReviewScan::kRejected;
    return space(p) == end_ ? ReviewScan::kAccepted : ReviewScan::kRejected;  // not a NUL inside
  }

 private:
  // kept: counts one more kept value or member name; false once the budget refuses.
  bool kept() { return ++kept_ < next_reserve_ || ask(); }

  // ask: the budget for what is kept and the open containers, every kReserveStep of them
  // (the frame stack doubles as it grows: twice its size is counted).
  bool ask() {
    next_reserve_ = kept_ + kReserveStep;
    next_depth_ = frames_.size() + kReserveStep * kKeptValueBytes / (2 * sizeof(Frame));
    if (!reserve_ || reserve_(kept_ * kKeptValueBytes + 2 * sizeof(Frame) * frames_.size())) return true;
    over_budget_ = true;
    return false;
  }

  // scan: the value at `p` and, when it opens a kept container, everything up to its end:
  // one loop over the kept containers' members and elements, whose open containers are
  // frames. What follows the value, or nullptr. Labels are the reader's states: a value
  // is due, a member's name is due, a value has been read.
  char* scan(char* p) {
    Place place = Place::kRoot;
    char* text = nullptr;
    SizeType length = 0;
  value:  // p: the first byte of a value at `place`
    switch (*p) {
      case '{':
      case '[': {
        const bool array = *p++ == '[';
        if (place == Place::kSkipped) {
          p = skip(p, array);
          if (p == nullptr) return nullptr;
          goto after_value;
        }
        // A container of a type its place does not want is kept empty (the decoder's type
        // check reads the same) and its content skipped.
        const bool wanted = array ? is_generic(place) : place != Place::kScalar;
        if (!(array ? document_.StartArray() : document_.StartObject()) || !kept()) return nullptr;
        if (!wanted) {
          if (!(array ? document_.EndArray(0) : document_.EndObject(0))) return nullptr;
          p = skip(p, array);
          if (p == nullptr) return nullptr;
          goto after_value;
        }
        frames_.push_back({place, array});
        counts_.push_back(0);
        if (frames_.size() >= next_depth_ && !ask()) return nullptr;
        p = space(p);
        if (*p == (array ? ']' : '}')) goto close;
        if (!array) goto member;
        ++counts_.back();
        place = Place::kOther;
        goto value;
      }
      case '"':
        if (place == Place::kSkipped) {
          p = const_cast<char*>(skip_json_string(p, end_));
        } else {
          p = string(p, text, length);
          if (p != nullptr && !(document_.String(text, length, false) && kept())) return nullptr;
        }
        break;
      case 'n':
        p = literal(p, "null");
        if (p != nullptr && place != Place::kSkipped && !(document_.Null() && kept())) return nullptr;
        break;
      case 't':
        p = literal(p, "true");
        if (p != nullptr && place != Place::kSkipped && !(document_.Bool(true) && kept())) return nullptr;
        break;
      case 'f':
        p = literal(p, "false");
        if (p != nullptr && place != Place::kSkipped && !(document_.Bool(false) && kept())) return nullptr;
        break;
      default:
        p = number(p, place != Place::kSkipped);
        break;
    }
    if (p == nullptr) return nullptr;
  after_value:  // p: just after a value
    if (frames_.empty()) return p;
    p = space(p);
    if (*p == ',') {
      p = space(p + 1);
      if (!frames_.back().array) goto member;
      ++counts_.back();
      place = Place::kOther;
      goto value;
    }
    if (*p != (frames_.back().array ? ']' : '}')) return nullptr;
  close:  // p: at the innermost frame's closing bracket
    ++p;
    {
      const bool array = frames_.back().array;
      frames_.pop_back();
      const SizeType count = counts_.back();
      counts_.pop_back();
      if (!(array ? document_.EndArray(count) : document_.EndObject(count))) return nullptr;
    }
    goto after_value;
  member:  // p: at a member's name in the innermost frame, an object
    if (*p != '"') return nullptr;
    p = string(p, text, length);
    if (p == nullptr) return nullptr;
    place = member_place(frames_.back().place, {text, length});
    if (place != Place::kSkipped) {
      ++counts_.back();
      if (!document_.Key(text, length, false) || !kept()) return nullptr;
    }
    p = space(p);
    if (*p != ':') return nullptr;
    p = space(p + 1);
    goto value;
  }

  // skip: the rest of a container whose opening bracket was just read, nothing of it kept,
  // validated as the reader would; what follows it, or nullptr. One loop for all of it,
  // however deep: what the envelope and the checks never read (managedFields, userInfo,
  // options) is most of the tokens of an applied review. Its nesting goes on frames_, so
  // the budget counts it.
  char* skip(char* p, bool array) {
    const std::size_t bottom = frames_.size();
    frames_.push_back({Place::kSkipped, array});
    if (frames_.size() >= next_depth_ && !ask()) return nullptr;
    p = space(p);
    if (*p == (array ? ']' : '}')) goto close;
  element:         // p: at the innermost frame's next member or element
    if (!array) {  // a member: its name and colon first
      if (*p != '"') return nullptr;
      p = const_cast<char*>(skip_json_string(p, end_));
      if (p == nullptr) return nullptr;
      p = space(p);
      if (*p != ':') return nullptr;
      p = space(p + 1);
    }
    switch (*p) {
      case '{':
      case '[':
        array = *p++ == '[';
        frames_.push_back({Place::kSkipped, array});
        if (frames_.size() >= next_depth_ && !ask()) return nullptr;
        p = space(p);
        if (*p == (array ? ']' : '}')) goto close;
        goto element;
      case '"':
        p = const_cast<char*>(skip_json_string(p, end_));
        break;
      case 'n':
        p = literal(p, "null");
        break;
      case 't':
        p = literal(p, "true");
        break;
      case 'f':
        p = literal(p, "false");
        break;
      default:
        p = number(p, false);
        break;
    }
    if (p == nullptr) return nullptr;
  after_value:  // p: just after a member's or an element's value
    p = space(p);
    if (*p == ',') {
      p = space(p + 1);
      goto element;
    }
    if (*p != (array ? ']' : '}')) return nullptr;
  close:  // p: at the innermost frame's closing bracket
    ++p;
    frames_.pop_back();
    if (frames_.size() == bottom) return p;
    array = frames_.back().array;
    goto after_value;
  }

  // string: the string at p (its opening quote), unescaped in place and NUL-terminated, in
  // `text` / `length`; what follows it, or nullptr.
  [[gnu::always_inline]] char* string(char* p, char*& text, SizeType& length) {
    char* const start = ++p;
    char* out = start;
    for (;;) {
      char* const run = p;
      p = const_cast<char*>(find_special(p));
      if (out != run) std::memmove(out, run, static_cast<std::size_t>(p - run));
      out += p - run;
      if (*p == '"') {
        *out = '\0';
        text = start;
        length = static_cast<SizeType>(out - start);
        return p + 1;
      }
      if (static_cast<unsigned char>(*p) >= 0x80) {  // UTF-8 is valid in strings only
        const auto bytes = utf8_sequence_length({p, static_cast<std::size_t>(end_ - p)}, 0);
        if (bytes == 0) return nullptr;
        if (out != p) std::memmove(out, p, bytes);
        out += bytes;
        p += bytes;
        continue;
      }
      if (*p != '\\') return nullptr;  // a control character, a NUL, or the end of the text
      if (p[1] == 'u') {
        unsigned cp = 0;
        const char* const next = unicode_escape(p, cp);
        if (next == nullptr) return nullptr;
        p = const_cast<char*>(next);
        out = put_utf8(out, cp);
        continue;
      }
      const char plain = kEscaped[static_cast<unsigned char>(p[1])];
      if (plain == 0) return nullptr;
      p += 2;
      *out++ = plain;
    }
  }

  // number: the number at p; what follows it, or nullptr. A plain integer of at most 18
  // digits is converted here, typed as RapidJSON types it (Uint up to 2^32-1, Int down to
  // -2^31, else Int64/Uint64); anything else goes to TokenNumber.
  char* number(char* p, bool keep) {
    char* const start = p;
    const bool minus = *p == '-';
    if (minus) ++p;
    if (*p == '0') {
      ++p;
    } else if (*p >= '1' && *p <= '9') {
      while (digit(*p)) ++p;
    } else {
      return nullptr;
    }
    const std::size_t digits = static_cast<std::size_t>(p - start) - (minus ? 1 : 0);
    bool plain = digits <= 18;
    if (*p == '.') {
      ++p;
      if (!digit(*p)) return nullptr;
      while (digit(*p)) ++p;
      plain = false;
    }
    if (*p == 'e' || *p == 'E') {
      ++p;
      if (*p == '+' || *p == '-') ++p;
      if (!digit(*p)) return nullptr;
      while (digit(*p)) ++p;
      plain = false;
    }
    if (!plain) return token_number(start, p, keep) ? p : nullptr;
    if (!keep) return p;
    std::uint64_t v = 0;
    for (const char* d = start + (minus ? 1 : 0); d != p; ++d) v = v * 10 + static_cast<unsigned>(*d - '0');
    bool ok = false;
    if (minus) {
      ok = v <= 2147483648u ? document_.Int(static_cast<int>(-static_cast<std::int64_t>(v)))
                            : document_.Int64(-static_cast<std::int64_t>(v));
    } else {
      ok = v <= 4294967295u ? document_.Uint(static_cast<unsigned>(v)) : document_.Uint64(v);
    }
    return ok && kept() ? p : nullptr;
  }

  bool token_number(const char* start, const char* end, bool keep) {
    const std::string token(start, end);
    rapidjson::StringStream stream(token.c_str());
    TokenNumber handler(keep ? &document_ : nullptr);
    rapidjson::Reader reader;
    if (reader.Parse(stream, handler).IsError()) return false;
    return !keep || kept();
  }

  static constexpr std::size_t kReserveStep = 4096;  // kept values between two asks
  static constexpr std::size_t kFramesKept = 4096;

  char* const text_;
  const char* const end_;  // the text's terminating NUL
  ReviewDocument& document_;
  const ReserveKept& reserve_;
  std::vector<Frame>& frames_;
  std::vector<SizeType>& counts_;
  std::size_t kept_ = 0;
  std::size_t next_reserve_ = kReserveStep;
  std::size_t next_depth_ = kReserveStep * kKeptValueBytes / (2 * sizeof(Frame));
  bool over_budget_ = false;
};

}  // namespace

ReviewScan scan_review(char* text, std::size_t size, ReviewDocument& document, const ReserveKept& reserve) {
  ReviewScan result = ReviewScan::kRejected;
  auto generate = [&](ReviewDocument& d) {
    result = Scanner(text, size, d, reserve).run();
    return result == ReviewScan::kAccepted;
  };
  document.Populate(generate);
  return result;
}

}  // namespace kubegap
