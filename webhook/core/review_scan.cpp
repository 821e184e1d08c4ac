#include "webhook/core/review_scan.h"

#include <rapidjson/reader.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "policies/text.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// find_special: the first byte at or after `p` that ends a run of plain ASCII string
// bytes: a quote, a backslash, a control character (the terminating NUL among them) or a
// byte of a multi-byte UTF-8 sequence (checked by the caller). Sixteen bytes at a time
// where SSE2 is there: the text has 31 readable bytes after its NUL.
const char* find_special(const char* p) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1f);
  for (;; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, control_max), control_max);
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)), control);
    // movemask of the bytes themselves: their high bits, the non-ASCII ones.
    if (const int mask = _mm_movemask_epi8(special) | _mm_movemask_epi8(bytes); mask != 0) {
      return p + __builtin_ctz(static_cast<unsigned>(mask));
    }
  }
#else
  while (*p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20 && static_cast<unsigned char>(*p) < 0x80) {
    ++p;
  }
  return p;
#endif
}

#if defined(__SSE2__)
// Block: which of the 32 bytes at `p` are quotes, backslashes, and others that end a run
// of plain string bytes (control characters, the NUL among them, and bytes of multi-byte
// UTF-8 sequences), a bit each. The text has 31 readable bytes after its NUL.
struct Block {
  std::uint32_t quote, backslash, other;
};

std::uint32_t bits(__m128i bytes) { return static_cast<std::uint32_t>(_mm_movemask_epi8(bytes)); }

Block block_at(const char* p) {
  const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1f);
  // A control byte is one whose unsigned maximum with 0x1f is 0x1f; a non-ASCII byte has
  // its high bit set, which movemask reads.
  const auto other = [&](__m128i b) {
    return bits(_mm_cmpeq_epi8(_mm_max_epu8(b, control_max), control_max)) | bits(b);
  };
  return {bits(_mm_cmpeq_epi8(low, quote)) | bits(_mm_cmpeq_epi8(high, quote)) << 16,
          bits(_mm_cmpeq_epi8(low, backslash)) | bits(_mm_cmpeq_epi8(high, backslash)) << 16,
          other(low) | other(high) << 16};
}

// escaped_bytes: the bytes of a block a backslash escapes, given its backslashes and
// `carry`, 1 when the previous block's last backslash escapes this block's first byte (set
// for the next block). A run of backslashes escapes the byte after it when the run is of
// odd length. Adding a run's first bit to the run ripples a carry to the byte just after
// it; an odd length puts that byte at the other parity from the run's first. The method is
// simdjson's (Langdale and Lemire, "Parsing Gigabytes of JSON per Second", 2019).
std::uint32_t escaped_bytes(std::uint32_t backslash, std::uint64_t& carry) {
  constexpr std::uint64_t kEven = 0x155555555;  // bits 0, 2, ..., 32
  const std::uint64_t b = backslash & ~carry;   // a backslash escaped from the last block is plain
  const std::uint64_t starts = b & ~(b << 1);
  const std::uint64_t after_even_starts = (b + (starts & kEven)) & ~b;
  const std::uint64_t after_odd_starts = (b + (starts & ~kEven)) & ~b;
  const std::uint64_t escaped = (after_even_starts & ~kEven) | (after_odd_starts & kEven);
  const auto out = static_cast<std::uint32_t>(escaped | carry);
  carry = escaped >> 32;
  return out;
}
#endif

bool hex4(const char* p, unsigned& out) {
  out = 0;
  for (int i = 0; i < 4; ++i) {  // stops at the first non-hex byte: never reads past a NUL
    const char c = p[i];
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
    out = out << 4 | digit;
  }
  return true;
}

char* put_utf8(char* out, unsigned cp) {
  if (cp < 0x80) {
    *out++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out++ = static_cast<char>(0xc0 | cp >> 6);
    *out++ = static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out++ = static_cast<char>(0xe0 | cp >> 12);
    *out++ = static_cast<char>(0x80 | (cp >> 6 & 0x3f));
    *out++ = static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out++ = static_cast<char>(0xf0 | cp >> 18);
    *out++ = static_cast<char>(0x80 | (cp >> 12 & 0x3f));
    *out++ = static_cast<char>(0x80 | (cp >> 6 & 0x3f));
    *out++ = static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

// unicode_escape: the \\uXXXX escape at `p` (its backslash), with the low surrogate that
// must follow a high one, as RapidJSON reads it (a lone low surrogate passes, as there);
// the code point in `cp`. Returns what follows, or nullptr when it is not one.
const char* unicode_escape(const char* p, unsigned& cp) {
  if (!hex4(p + 2, cp)) return nullptr;
  p += 6;
  if (cp >= 0xd800 && cp <= 0xdbff) {  // a high surrogate needs its low one next
    unsigned low = 0;
    if (p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, low) || low < 0xdc00 || low > 0xdfff) return nullptr;
    p += 6;
    cp = ((cp - 0xd800) << 10 | (low - 0xdc00)) + 0x10000;
  }
  return p;
}

// kEscaped: what the one-letter escape \\c stands for, by c; 0 where c makes no escape
// (\\u is read by unicode_escape).
constexpr auto kEscaped = [] {
  std::array<char, 256> table{};
  table['"'] = '"';
  table['\\'] = '\\';
  table['/'] = '/';
  table['b'] = '\b';
  table['f'] = '\f';
  table['n'] = '\n';
  table['r'] = '\r';
  table['t'] = '\t';
  return table;
}();

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
  bool fresh = true;  // nothing read in it yet
};

thread_local std::vector<Frame> t_frames;
thread_local std::vector<SizeType> t_counts;

class Scanner {
 public:
  // The frame stacks are the thread's, reused scan after scan (one is run at a time).
  Scanner(char* text, std::size_t size, ReviewDocument& document, const ReserveKept& reserve)
      : p_(text), end_(text + size), document_(document), reserve_(reserve), frames_(t_frames), counts_(t_counts) {
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
    space();
    bool ok = value(Place::kRoot);
    while (ok && !frames_.empty()) ok = step();
    if (over_budget_) return ReviewScan::kOverBudget;
    if (!ok) return ReviewScan::kRejected;
    space();
    return p_ == end_ ? ReviewScan::kAccepted : ReviewScan::kRejected;  // not a NUL inside
  }

 private:
  void space() {
    // The API server writes compact JSON: most calls find a token at once.
    if (static_cast<unsigned char>(*p_) > ' ') return;
    while (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t') ++p_;
  }

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

  // step: the next member or element of the innermost open container, or its end. Only
  // kept containers are frames here: a skipped one is read whole by skip().
  bool step() {
    Frame& f = frames_.back();
    space();
    const char close = f.array ? ']' : '}';
    if (f.fresh) {
      f.fresh = false;
      if (*p_ == close) return end();
    } else if (*p_ == ',') {
      ++p_;
      space();
    } else {
      return *p_ == close && end();
    }
    if (f.array) {
      ++counts_.back();
      return value(Place::kOther);  // `f` may be gone after this: value() can open a container
    }
    if (*p_ != '"' || !string()) return false;
    const Place child = member_place(f.place, {string_, string_length_});
    if (child != Place::kSkipped) {
      ++counts_.back();
      if (!document_.Key(string_, string_length_, false) || !kept()) return false;
    }
    space();
    if (*p_ != ':') return false;
    ++p_;
    space();
    return value(child);
  }

  bool end() {
    ++p_;
    const Frame f = frames_.back();
    frames_.pop_back();
    const SizeType count = counts_.back();
    counts_.pop_back();
    return f.array ? document_.EndArray(count) : document_.EndObject(count);
  }

  // skip: the rest of a container whose opening bracket was just read, nothing of it kept,
  // validated as the reader would. One loop for all of it, however deep: what the
  // envelope and the checks never read (managedFields, userInfo, options) is most of the
  // tokens of an applied review. Its nesting goes on frames_, so the budget counts it.
  bool skip(bool array) {
    const std::size_t bottom = frames_.size();
    bool opened = true;  // nothing read yet in the innermost container
    frames_.push_back({Place::kSkipped, array});
    if (frames_.size() >= next_depth_ && !ask()) return false;
    for (;;) {
      space();
      if (*p_ == (frames_.back().array ? ']' : '}')) {
        ++p_;
        frames_.pop_back();
        if (frames_.size() == bottom) return true;
        opened = false;
        continue;
      }
      if (!opened) {
        if (*p_ != ',') return false;
        ++p_;
        space();
      }
      if (!frames_.back().array) {  // a member: its name and colon first
        if (*p_ != '"' || !skip_string()) return false;
        space();
        if (*p_ != ':') return false;
        ++p_;
        space();
      }
      if (*p_ == '{' || *p_ == '[') {
        frames_.push_back({Place::kSkipped, *p_ == '['});
        ++p_;
        if (frames_.size() >= next_depth_ && !ask()) return false;
        opened = true;
        continue;
      }
      if (!skip_scalar()) return false;  // containers are read above
      opened = false;
    }
  }

  template <std::size_t N>
  bool literal(const char (&word)[N]) {
    // Compared byte by byte from the start: a shorter text ends in its NUL first.
    for (std::size_t i = 0; i + 1 < N; ++i) {
      if (p_[i] != word[i]) return false;
    }
    p_ += N - 1;
    return true;
  }

  bool skip_scalar() {
    switch (*p_) {
      case '"':
        return skip_string();
      case 'n':
        return literal("null");
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      default:
        return number(false);
    }
  }

  [[gnu::always_inline]] bool value(Place place) {
    const bool keep = place != Place::kSkipped;
    switch (*p_) {
      case '{':
      case '[':
        if (!keep) return skip(*p_++ == '[');
        return open(place, *p_ == '[');
      case '"':
        if (!keep) return skip_string();
        return string() && document_.String(string_, string_length_, false) && kept();
      case 'n':
        return literal("null") && (!keep || (document_.Null() && kept()));
      case 't':
        return literal("true") && (!keep || (document_.Bool(true) && kept()));
      case 'f':
        return literal("false") && (!keep || (document_.Bool(false) && kept()));
      default:
        return number(keep);
    }
  }

  // open: a container at `place`. One of a type its place does not want is kept empty
  // (the decoder's type check reads the same) and its content skipped.
  bool open(Place place, bool array) {
    ++p_;
    const bool wanted = array ? is_generic(place) : place != Place::kScalar;
    if (!(array ? document_.StartArray() : document_.StartObject()) || !kept()) return false;
    if (!wanted) return (array ? document_.EndArray(0) : document_.EndObject(0)) && skip(array);
    frames_.push_back({place, array});
    counts_.push_back(0);
    return frames_.size() < next_depth_ || ask();
  }

  // string: the string at p_ (its opening quote), unescaped in place and NUL-terminated,
  // in string_ / string_length_.
  bool string() {
    char* const start = ++p_;
    char* out = start;
    for (;;) {
      char* const run = p_;
      p_ = const_cast<char*>(find_special(p_));
      if (out != run) std::memmove(out, run, static_cast<std::size_t>(p_ - run));
      out += p_ - run;
      if (*p_ == '"') {
        ++p_;
        *out = '\0';
        string_ = start;
        string_length_ = static_cast<SizeType>(out - start);
        return true;
      }
      if (static_cast<unsigned char>(*p_) >= 0x80) {  // UTF-8 is valid in strings only
        const auto length = utf8_sequence_length({p_, static_cast<std::size_t>(end_ - p_)}, 0);
        if (length == 0) return false;
        if (out != p_) std::memmove(out, p_, length);
        out += length;
        p_ += length;
        continue;
      }
      if (*p_ != '\\') return false;  // a control character, a NUL, or the end of the text
      if (p_[1] == 'u') {
        unsigned cp = 0;
        const char* const next = unicode_escape(p_, cp);
        if (next == nullptr) return false;
        p_ = const_cast<char*>(next);
        out = put_utf8(out, cp);
        continue;
      }
      const char plain = kEscaped[static_cast<unsigned char>(p_[1])];
      if (plain == 0) return false;
      p_ += 2;
      *out++ = plain;
    }
  }

  // skip_string: the string at p_ (its opening quote), validated, nothing written.
  // Skipped strings are where escapes crowd (the last-applied annotation is JSON in a
  // string, a \" every few bytes), so past the first special byte 32 bytes at a time
  // where SSE2 is there: a block whose escapes are all \" and \\ and whose bytes are all
  // ASCII is read from its masks alone.
  bool skip_string() {
    // Most strings (keys, names) end before their first special byte: one search.
    const char* p = find_special(p_ + 1);
    if (*p == '"') {
      p_ = const_cast<char*>(p) + 1;
      return true;
    }
    for (;;) {
#if defined(__SSE2__)
      std::uint64_t carry = 0;
      for (;;) {
        const Block block = block_at(p);
        const std::uint64_t escaped_first = carry;
        const std::uint32_t escaped = escaped_bytes(block.backslash, carry);
        const std::uint32_t end = block.quote & ~escaped;
        const std::uint32_t before_end = end == 0 ? ~0u : (end & (0u - end)) - 1;
        const std::uint32_t unusual = ((escaped & ~(block.quote | block.backslash)) | block.other) & before_end;
        if (unusual == 0) {
          if (end == 0) {
            p += 32;
            continue;
          }
          p_ = const_cast<char*>(p) + __builtin_ctz(end) + 1;
          return true;
        }
        p -= escaped_first;  // from the backslash that escapes the first byte
        break;
      }
#endif
      p = find_special(p);  // one byte that needs care, read as RapidJSON reads it
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') break;
      if (c == '\\') {
        unsigned cp = 0;
        p = p[1] == 'u' ? unicode_escape(p, cp) : kEscaped[static_cast<unsigned char>(p[1])] != 0 ? p + 2 : nullptr;
        if (p == nullptr) return false;
      } else if (c >= 0x80) {  // UTF-8 is valid in strings only
        const auto length = utf8_sequence_length({p, static_cast<std::size_t>(end_ - p)}, 0);
        if (length == 0) return false;
        p += length;
      } else {
        return false;  // a control character, a NUL, or the end of the text
      }
    }
    p_ = const_cast<char*>(p) + 1;
    return true;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  // number: a plain integer of at most 18 digits is converted here, typed as RapidJSON
  // types it (Uint up to 2^32-1, Int down to -2^31, else Int64/Uint64); anything else
  // goes to TokenNumber.
  bool number(bool keep) {
    char* const start = p_;
    const bool minus = *p_ == '-';
    if (minus) ++p_;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (digit(*p_)) ++p_;
    } else {
      return false;
    }
    const std::size_t digits = static_cast<std::size_t>(p_ - start) - (minus ? 1 : 0);
    bool plain = digits <= 18;
    if (*p_ == '.') {
      ++p_;
      if (!digit(*p_)) return false;
      while (digit(*p_)) ++p_;
      plain = false;
    }
    if (*p_ == 'e' || *p_ == 'E') {
      ++p_;
      if (*p_ == '+' || *p_ == '-') ++p_;
      if (!digit(*p_)) return false;
      while (digit(*p_)) ++p_;
      plain = false;
    }
    if (!plain) return token_number(start, keep);
    if (!keep) return true;
    std::uint64_t v = 0;
    for (const char* d = start + (minus ? 1 : 0); d != p_; ++d) v = v * 10 + static_cast<unsigned>(*d - '0');
    bool ok = false;
    if (minus) {
      ok = v <= 2147483648u ? document_.Int(static_cast<int>(-static_cast<std::int64_t>(v)))
                            : document_.Int64(-static_cast<std::int64_t>(v));
    } else {
      ok = v <= 4294967295u ? document_.Uint(static_cast<unsigned>(v)) : document_.Uint64(v);
    }
    return ok && kept();
  }

  bool token_number(const char* start, bool keep) {
    const std::string token(start, static_cast<const char*>(p_));
    rapidjson::StringStream stream(token.c_str());
    TokenNumber handler(keep ? &document_ : nullptr);
    rapidjson::Reader reader;
    if (reader.Parse(stream, handler).IsError()) return false;
    return !keep || kept();
  }

  static constexpr std::size_t kReserveStep = 4096;  // kept values between two asks
  static constexpr std::size_t kFramesKept = 4096;

  char* p_;
  const char* const end_;  // the text's terminating NUL
  ReviewDocument& document_;
  const ReserveKept& reserve_;
  std::vector<Frame>& frames_;
  std::vector<SizeType>& counts_;
  char* string_ = nullptr;
  SizeType string_length_ = 0;
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
