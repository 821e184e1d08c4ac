#pragma once
// The string primitives of the review scan (review_scan.cpp): where a run of plain string
// bytes ends, what an escape stands for, and a whole string validated without writing it.
// Each reads as RapidJSON's reader reads: what it refuses, they refuse.
//
// The text they read ends in a NUL followed by 31 more readable bytes (kTextPadding): they
// read up to 32 bytes at a time.

#include <array>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kubegap {

// find_special: the first byte at or after `p` that ends a run of plain ASCII string
// bytes: a quote, a backslash, a control character (the terminating NUL among them) or a
// byte of a multi-byte UTF-8 sequence (checked by the caller). Sixteen bytes at a time
// where SSE2 is there: the text has 31 readable bytes after its NUL.
inline const char* find_special(const char* p) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(' ');
  for (;; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Compared as signed bytes, a control byte and a non-ASCII one (0x80 and up, negative)
    // are both below ' ': one comparison finds both.
    const __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                                         _mm_cmplt_epi8(bytes, space));
    if (const int mask = _mm_movemask_epi8(special); mask != 0) {
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

// kEscaped: what the one-letter escape \\c stands for, by c; 0 where c makes no escape
// (\\u is read by unicode_escape).
inline constexpr auto kEscaped = [] {
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

// unicode_escape: the \\uXXXX escape at `p` (its backslash), with the low surrogate that
// must follow a high one, as RapidJSON reads it (a lone low surrogate passes, as there);
// the code point in `cp`. Returns what follows, or nullptr when it is not one.
const char* unicode_escape(const char* p, unsigned& cp);

// put_utf8: `cp` written at `out` as UTF-8; returns what follows it.
char* put_utf8(char* out, unsigned cp);

// skip_json_string_rest: skip_json_string past the string's first special byte, at `p`.
const char* skip_json_string_rest(const char* p, const char* end);

// skip_json_string: the string at `p` (its opening quote), validated, nothing written;
// what follows it, or nullptr. `end` is the text's terminating NUL. Most strings (keys,
// names) end before their first special byte: one search, inline.
inline const char* skip_json_string(const char* p, const char* end) {
  p = find_special(p + 1);
  if (*p == '"') return p + 1;
  return skip_json_string_rest(p, end);
}

}  // namespace kubegap
