#pragma once
// What every fuzz target may assert besides "no sanitizer report": small checks of the
// contracts in DESIGN.md that hold for any input. A broken one aborts, which libFuzzer
// (and the replay driver) report as a crash with the input that caused it.

#include <rapidjson/document.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace kgfuzz {

// require: abort with `what` when `ok` is false.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz oracle failed: %s\n", what);
    std::abort();
  }
}

// require_json: `text` is one well-formed JSON document (what we send must parse).
inline void require_json(std::string_view text, const char* what) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  require(!doc.HasParseError(), what);
}

}  // namespace kgfuzz
