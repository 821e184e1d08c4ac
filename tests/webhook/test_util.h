#pragma once
// Helpers shared by the webhook library tests: fixture files, JSON parsing and DOM
// comparison, golden files, and an independent UTF-8 scanner for checking the text the
// webhook puts on the wire.
//
//   rapidjson::Document doc = kgtest::parse_json(result.body);      // fails the test if invalid
//   kgtest::expect_matches_golden(doc, "golden/x.response.json");  // KUBEGAP_UPDATE_GOLDEN=1 rewrites

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace kgtest {

inline std::string fixture_path(std::string_view relative) {
  return std::string(KUBEGAP_FIXTURES_DIR) + "/" + std::string(relative);
}

// alias_bomb: `header` then eight levels, each naming the level below ten times, over
// `l0` (10^8 visits for a walker that expands aliases). `merge`: each level merges the
// one below (`{<<: [*l0, ...]}` over `{}`: the security review's 646-byte file); else
// each lists it (`[*l0, ...]` over a list of ten scalars).
inline std::string alias_bomb(std::string header, bool merge) {
  std::string text = std::move(header) + (merge ? "l0: &l0 {}\n" : "l0: &l0 [a, b, c, d, e, f, g, h, i, j]\n");
  for (int i = 1; i <= 8; ++i) {
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + (merge ? " {<<: [" : " [");
    for (int j = 0; j < 10; ++j) text += std::string(j ? ", " : "") + "*l" + std::to_string(i - 1);
    text += merge ? "]}\n" : "]\n";
  }
  return text;
}

inline std::string source_path(std::string_view relative) {
  return std::string(KUBEGAP_SOURCE_DIR) + "/" + std::string(relative);
}

// read_text: the whole file; an empty optional when it cannot be opened.
inline std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// try_parse_json: strict parse (UTF-8 validated); error text on failure.
inline std::optional<std::string> try_parse_json(std::string_view text, rapidjson::Document& doc) {
  constexpr unsigned kFlags = rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag;
  doc.Parse<kFlags>(text.data(), text.size());
  if (!doc.HasParseError()) return std::nullopt;
  return std::string("offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
         rapidjson::GetParseError_En(doc.GetParseError());
}

// parse_json: the document; adds a test failure (and returns a null document) when the
// text is not valid JSON.
inline rapidjson::Document parse_json(std::string_view text) {
  rapidjson::Document doc;
  if (auto error = try_parse_json(text, doc)) {
    ADD_FAILURE() << "not valid JSON (" << *error << "): " << text.substr(0, 400);
    doc.SetNull();
  }
  return doc;
}

inline std::string pretty(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

inline bool update_golden() {
  const char* env = std::getenv("KUBEGAP_UPDATE_GOLDEN");
  return env != nullptr && std::string_view(env) == "1";
}

// expect_matches_golden: DOM equality (member order does not matter) with the golden
// file; with KUBEGAP_UPDATE_GOLDEN=1 the golden file is rewritten instead.
inline void expect_matches_golden(const rapidjson::Value& actual, const std::string& golden_relative) {
  const std::string path = fixture_path(golden_relative);
  if (update_golden()) {
    write_text(path, pretty(actual));
    return;
  }
  const auto text = read_text(path);
  ASSERT_TRUE(text.has_value()) << "missing golden file " << path
                                << " (run with KUBEGAP_UPDATE_GOLDEN=1, then review it)";
  rapidjson::Document expected;
  const auto error = try_parse_json(*text, expected);
  ASSERT_FALSE(error.has_value()) << path << ": " << *error;
  EXPECT_TRUE(expected == actual) << "response differs from " << path << "\nexpected:\n"
                                  << pretty(expected) << "actual:\n"
                                  << pretty(actual);
}

inline const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  const auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

inline std::string str(const rapidjson::Value& value) {
  return value.IsString() ? std::string(value.GetString(), value.GetStringLength()) : std::string();
}

// Utf8Scan: an independent decoder (not policies/text.cpp) for asserting wire text.
struct Utf8Scan {
  bool valid = true;
  std::size_t runes = 0;
  bool has_control = false;  // C0, DEL or C1
};

inline Utf8Scan scan_utf8(std::string_view text) {
  Utf8Scan scan;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (b0 < 0x80) {
      cp = b0, len = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      cp = b0 & 0x1Fu, len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      cp = b0 & 0x0Fu, len = 3;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      cp = b0 & 0x07u, len = 4;
    } else {
      scan.valid = false;
      return scan;
    }
    if (i + len > text.size()) {
      scan.valid = false;
      return scan;
    }
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) {
        scan.valid = false;
        return scan;
      }
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      scan.valid = false;
      return scan;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) scan.has_control = true;
    ++scan.runes;
    i += len;
  }
  return scan;
}

}  // namespace kgtest
