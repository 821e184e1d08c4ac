#include "webhook/core/json_string_scan.h"

#include <string_view>

#include "policies/text.h"

namespace kubegap {
namespace {

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
  const __m128i space = _mm_set1_epi8(' ');
  // Compared as signed bytes, a control byte and a non-ASCII one are both below ' '.
  const auto other = [&](__m128i b) { return bits(_mm_cmplt_epi8(b, space)); };
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

}  // namespace

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

// skip_json_string_rest: skipped strings are where escapes crowd (the last-applied
// annotation is JSON in a string, a \" every few bytes), so past the first special byte
// 32 bytes at a time where SSE2 is there: a block whose escapes are all \" and \\ and
// whose bytes are all ASCII is read from its masks alone.
const char* skip_json_string_rest(const char* p, const char* end) {
  for (;;) {
#if defined(__SSE2__)
    std::uint64_t carry = 0;
    for (;;) {
      const Block block = block_at(p);
      const std::uint64_t escaped_first = carry;
      const std::uint32_t escaped = escaped_bytes(block.backslash, carry);
      const std::uint32_t closing = block.quote & ~escaped;
      const std::uint32_t before_end = closing == 0 ? ~0u : (closing & (0u - closing)) - 1;
      const std::uint32_t unusual = ((escaped & ~(block.quote | block.backslash)) | block.other) & before_end;
      if (unusual == 0) {
        if (closing == 0) {
          p += 32;
          continue;
        }
        return p + __builtin_ctz(closing) + 1;
      }
      p -= escaped_first;  // from the backslash that escapes the first byte
      break;
    }
#endif
    p = find_special(p);  // one byte that needs care, read as RapidJSON reads it
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') return p + 1;
    if (c == '\\') {
      unsigned cp = 0;
      p = p[1] == 'u' ? unicode_escape(p, cp) : kEscaped[static_cast<unsigned char>(p[1])] != 0 ? p + 2 : nullptr;
      if (p == nullptr) return nullptr;
    } else if (c >= 0x80) {  // UTF-8 is valid in strings only
      const auto bytes = utf8_sequence_length({p, static_cast<std::size_t>(end - p)}, 0);
      if (bytes == 0) return nullptr;
      p += bytes;
    } else {
      return nullptr;  // a control character, a NUL, or the end of the text
    }
  }
}

}  // namespace kubegap
