#include "webhook/core/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_set>

namespace kubegap {
namespace {

// ConversionError: a node that JSON cannot hold, with its line kept apart from the
// message so the loader can report it as file:line.
class ConversionError : public ConfigError {
 public:
  ConversionError(int line, const std::string& message)
      : ConfigError("line " + std::to_string(line) + ": " + message), line_(line), message_(message) {}
  int line() const { return line_; }
  const std::string& message() const { return message_; }

 private:
  int line_;
  std::string message_;
};

bool parse_integer(const std::string& text, std::int64_t& out) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, out);
  return !digits.empty() && ec == std::errc() && ptr == end;
}

bool looks_like_float(const std::string& text) {
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return std::regex_match(text, kFloat);
}

rapidjson::Value scalar_to_json(const YAML::Node& node, rapidjson::Document::AllocatorType& a) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "?") {  // plain (unquoted) scalar: resolve its type
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
      return rapidjson::Value(rapidjson::kNullType);
    }
    if (text == "true" || text == "True" || text == "TRUE") return rapidjson::Value(true);
    if (text == "false" || text == "False" || text == "FALSE") return rapidjson::Value(false);
    std::int64_t integer = 0;
    if (parse_integer(text, integer)) return rapidjson::Value(integer);
    if (looks_like_float(text)) {
      // strtod, not stod: an out-of-range number ("1e999") must not throw.
      const double value = std::strtod(text.c_str(), nullptr);
      if (std::isfinite(value)) return rapidjson::Value(value);
    }
  }
  return rapidjson::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), a);
}

int line_of(const YAML::Node& node, const YamlConversion& conversion) {
  return conversion.line_offset + node.Mark().line + 1;
}

// is_merge_key: `<<` written plain (or tagged !!merge). A quoted "<<" is an ordinary key.
bool is_merge_key(const YAML::Node& key) {
  return key.IsScalar() && key.Scalar() == "<<" && (key.Tag() == "?" || key.Tag() == "tag:yaml.org,2002:merge");
}

using MapEntries = std::vector<std::pair<YAML::Node, YAML::Node>>;

void check_scalar_key(const YAML::Node& key, const YamlConversion& conversion) {
  if (!key.IsScalar()) throw ConversionError(line_of(key, conversion), "mapping keys must be scalars");
}

// spend: one node of the budget, and one more for every 16 bytes of a scalar: an alias
// of a long string copies it, so a few hundred aliases of one 60 KB string must not make
// gigabytes where the node count alone would allow it.
void spend(YamlConversion& conversion, const YAML::Node& at) {
  const std::size_t cost = 1 + (at.IsScalar() ? at.Scalar().size() / 16 : 0);
  if (conversion.budget < cost) {
    throw ConversionError(line_of(at, conversion),
                          "the YAML expands to too many nodes (cyclic or exponential aliases?)");
  }
  conversion.budget -= cost;
}

// Merges nest (a merged mapping may merge others); deeper than this is a cycle or abuse.
constexpr int kMaxMergeDepth = 16;

// map_entries: the members of a mapping with its merge keys expanded, per YAML 1.1's
// merge type (https://yaml.org/type/merge.html): the mapping's own keys win over merged
// ones, and of a sequence of merged mappings an earlier one wins over a later one. Every
// merged mapping and every merged member is charged to the node budget, so merges cannot
// multiply an alias bomb, not even one of empty mappings (ten aliases per level of an
// empty map, eight levels deep: 10^8 visits that merge nothing).
MapEntries map_entries(const YAML::Node& map, YamlConversion& conversion, int depth) {
  if (depth > kMaxMergeDepth) throw ConversionError(line_of(map, conversion), "merge keys nested too deeply");
  MapEntries entries;
  std::vector<YAML::Node> merged;
  for (const auto& entry : map) {
    check_scalar_key(entry.first, conversion);
    if (!is_merge_key(entry.first)) {
      entries.emplace_back(entry.first, entry.second);
      continue;
    }
    const YAML::Node& value = entry.second;
    if (value.IsMap()) {
      merged.push_back(value);
    } else if (value.IsSequence() &&
               std::all_of(value.begin(), value.end(), [](const YAML::Node& n) { return n.IsMap(); })) {
      for (const auto& element : value) merged.push_back(element);
    } else {
      throw ConversionError(line_of(entry.first, conversion),
                            "merge key <<: expected a mapping or a sequence of mappings (an alias such as *base)");
    }
  }
  if (merged.empty()) return entries;
  std::unordered_set<std::string> present;
  for (const auto& entry : entries) present.insert(entry.first.Scalar());
  for (const auto& source : merged) {
    spend(conversion, source);
    for (auto& entry : map_entries(source, conversion, depth + 1)) {
      spend(conversion, entry.first);
      if (present.insert(entry.first.Scalar()).second) entries.push_back(std::move(entry));
    }
  }
  return entries;
}

// FieldLineRecorder: records field lines while a document is converted, within bounds:
// a path longer than kMaxPath is not recorded (its errors fall back to an ancestor's
// line), and the paths of one text may take YamlConversion::field_line_bytes bytes in
// all, so that deep or aliased input cannot make the map quadratic.
class FieldLineRecorder {
 public:
  static constexpr std::size_t kMaxPath = 512;

  explicit FieldLineRecorder(YamlConversion& conversion) : conversion_(conversion) {}

  bool records(const std::string& path) const {
    return conversion_.field_lines != nullptr && path.size() <= kMaxPath && path.size() <= conversion_.field_line_bytes;
  }
  void record(const std::string& path, int line) {
    if (!records(path)) return;
    conversion_.field_line_bytes -= path.size();
    conversion_.field_lines->emplace(path, line);
  }

 private:
  YamlConversion& conversion_;
};

}  // namespace

std::string member_path(const std::string& parent, std::string_view name) {
  if (name.empty()) return parent;
  return parent.empty() ? std::string(name) : parent + "." + std::string(name);
}

std::string index_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string join_path(const std::string& base, std::string_view relative) {
  if (relative.empty()) return base;
  if (relative.front() == '[' || base.empty()) return base + std::string(relative);
  return base + "." + std::string(relative);
}

int field_line(const FieldLines& lines, std::string_view path) {
  std::string key(path);
  for (;;) {
    if (const auto it = lines.find(key); it != lines.end()) return it->second;
    if (key.empty()) return 0;
    // Up one level: drop "[i]" or ".name". A name holding '.' or '[' only makes this
    // climb in smaller steps; every step shortens the key.
    const std::size_t cut = key.back() == ']' ? key.rfind('[') : key.find_last_of(".[");
    key.resize(cut == std::string::npos ? 0 : cut);
  }
}

rapidjson::Value yaml_to_json(const YAML::Node& root, rapidjson::Document::AllocatorType& a,
                              YamlConversion& conversion) {
  // Iterative, so a deeply nested file cannot exhaust the stack.
  struct Frame {
    YAML::Node node;
    rapidjson::Value* target;
    std::string path;  // only while its field lines are recorded
    bool recorded;
  };
  FieldLineRecorder recorder(conversion);
  rapidjson::Value result;
  std::vector<Frame> stack{{root, &result, {}, recorder.records("")}};
  if (stack.back().recorded) recorder.record("", line_of(root, conversion));
  // push_child: converts `node` into `target` later, recording its field line now.
  const auto push_child = [&](const Frame& parent, const YAML::Node& node, rapidjson::Value* target,
                              const YAML::Node& line_node, auto&& child_path) {
    std::string path = parent.recorded ? child_path() : std::string();
    const bool recorded = parent.recorded && recorder.records(path);
    if (recorded) recorder.record(path, line_of(line_node, conversion));
    stack.push_back({node, target, recorded ? std::move(path) : std::string(), recorded});
  };
  while (!stack.empty()) {
    const Frame frame = std::move(stack.back());
    stack.pop_back();
    spend(conversion, frame.node);
    const YAML::Node& node = frame.node;
    switch (node.Type()) {
      case YAML::NodeType::Sequence: {
        frame.target->SetArray();
        frame.target->Reserve(static_cast<rapidjson::SizeType>(node.size()), a);
        for (std::size_t i = 0; i < node.size(); ++i) frame.target->PushBack(rapidjson::Value(), a);
        for (std::size_t i = 0; i < node.size(); ++i) {
          // A sequence element's line: where the element starts.
          push_child(frame, node[i], &(*frame.target)[static_cast<rapidjson::SizeType>(i)], node[i],
                     [&] { return index_path(frame.path, i); });
        }
        break;
      }
      case YAML::NodeType::Map: {
        frame.target->SetObject();
        const MapEntries entries = map_entries(node, conversion, 0);
        for (const auto& entry : entries) {
          const std::string& name = entry.first.Scalar();
          frame.target->AddMember(rapidjson::Value(name.c_str(), static_cast<rapidjson::SizeType>(name.size()), a),
                                  rapidjson::Value(), a);
        }
        auto member = frame.target->MemberBegin();
        for (const auto& entry : entries) {
          // A member's line: its key's, also when the value is empty or on the next lines.
          push_child(frame, entry.second, &member->value, entry.first,
                     [&] { return member_path(frame.path, entry.first.Scalar()); });
          ++member;
        }
        break;
      }
      case YAML::NodeType::Scalar:
        *frame.target = scalar_to_json(node, a);
        break;
      default:
        frame.target->SetNull();
        break;
    }
  }
  return result;
}

namespace {

// TextDocument: the text of one `---` document and the number of lines before it.
struct TextDocument {
  std::string_view text;
  int first_line = 0;
};

// is_document_start: a line starting with the `---` marker (followed by nothing, a space
// or a tab). YAML forbids such a line inside any content, block scalars and quoted
// scalars included, so it always starts a new document.
bool is_document_start(std::string_view line) {
  return line.starts_with("---") && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// is_preamble_line: a line that can come before the first `---` without being content
// (blank, a comment, a directive such as %YAML 1.2).
bool is_preamble_line(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#' || (first == 0 && line[0] == '%');
}

// split_documents: the text cut before every `---` marker, so that one document's syntax
// error cannot hide the others. Comments and directives before a marker stay with it.
std::vector<TextDocument> split_documents(std::string_view text) {
  std::vector<TextDocument> documents{{text.substr(0, 0), 0}};
  std::size_t start = 0;     // of the current document
  bool has_content = false;  // the current document has more than a preamble
  int line_number = 0;
  for (std::size_t pos = 0; pos < text.size(); ++line_number) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    if (is_document_start(line) && has_content) {
      documents.back().text = text.substr(start, pos - start);
      documents.push_back({{}, line_number});
      start = pos;
      has_content = false;
    }
    has_content = has_content || is_document_start(line) || !is_preamble_line(line);
    pos = end + 1;
  }
  documents.back().text = text.substr(start);
  return documents;
}

// NullDocumentWatch: whether the document the parser last handled was one null node, and
// where.
class NullDocumentWatch final : public YAML::EventHandler {
 public:
  bool null_root = false;
  YAML::Mark mark;

  void OnDocumentStart(const YAML::Mark&) override { events_ = 0; }
  void OnDocumentEnd() override { null_root = events_ == 1 && null_seen_; }
  void OnNull(const YAML::Mark& at, YAML::anchor_t) override {
    seen(true);
    mark = at;
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { seen(false); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { seen(false); }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    seen(false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    seen(false);
  }
  void OnMapEnd() override {}

 private:
  void seen(bool null) {
    ++events_;
    null_seen_ = null;
  }
  int events_ = 0;
  bool null_seen_ = false;
};

// refuse_stalling_text: throws YAML::ParserException where yaml-cpp 0.7's LoadAll would
// never return. A ',' that starts a token at document level (`,` alone, `{},`, `"x",`,
// `- a` then `,` on the next line) is a token no rule of its parser consumes: each call
// then yields one more null document at the same place, and LoadAll collects them until
// memory runs out (yaml-cpp issue #1040, fixed upstream by PR #1319; Debian 12 ships
// 0.7.0). Found by tests/fuzz (check_fuzz). A parse without building nodes, only for
// texts with a ',' (the only token seen to stall): a second scan of those documents.
void refuse_stalling_text(const std::string& text) {
  if (text.find(',') == std::string::npos) return;
  std::istringstream input(text);
  YAML::Parser parser(input);
  NullDocumentWatch watch;
  // Where the last document was null, or -1 (a plain int: GCC 12 at -O1 warns that an
  // optional<Mark> may be read uninitialised).
  int previous_null_pos = -1;
  while (parser.HandleNextDocument(watch)) {
    if (!watch.null_root) {
      previous_null_pos = -1;
    } else if (previous_null_pos >= 0 && previous_null_pos == watch.mark.pos) {
      throw YAML::ParserException(watch.mark, "unexpected ',' where a document or its end should be");
    } else {
      previous_null_pos = watch.mark.pos;
    }
  }
}

void convert_document(const YAML::Node& node, YamlConversion& conversion, ParsedYaml& out) {
  YamlDocument document;
  document.line = line_of(node, conversion);
  FieldLines* const previous = conversion.field_lines;
  conversion.field_lines = &document.field_lines;
  rapidjson::Value value = yaml_to_json(node, document.json.GetAllocator(), conversion);
  conversion.field_lines = previous;  // not left pointing at this local
  static_cast<rapidjson::Value&>(document.json).Swap(value);
  out.documents.push_back(std::move(document));
}

// JsonDocumentBuilder: the SAX events of a JSON document into a RapidJSON document,
// recording field lines as yaml_to_json does (a member at its key's line, an element
// where it starts, "" at the document), lines counted from the parser's offset.
class JsonDocumentBuilder {
 public:
  using Ch = char;
  using SizeType = rapidjson::SizeType;
  JsonDocumentBuilder(YamlDocument& document, const rapidjson::StringStream& stream, const char* begin,
                      YamlConversion& conversion)
      : document_(document), stream_(stream), begin_(begin), line_(conversion.line_offset + 1), recorder_(conversion) {}

  bool Null() {
    return value([&] { return document_.json.Null(); });
  }
  bool Bool(bool b) {
    return value([&] { return document_.json.Bool(b); });
  }
  bool Int(int i) {
    return value([&] { return document_.json.Int(i); });
  }
  bool Uint(unsigned u) {
    return value([&] { return document_.json.Uint(u); });
  }
  bool Int64(std::int64_t i) {
    return value([&] { return document_.json.Int64(i); });
  }
  bool Uint64(std::uint64_t u) {
    return value([&] { return document_.json.Uint64(u); });
  }
  bool Double(double d) {
    return value([&] { return document_.json.Double(d); });
  }
  bool RawNumber(const Ch* s, SizeType n, bool copy) {
    return value([&] { return document_.json.RawNumber(s, n, copy); });
  }
  bool String(const Ch* s, SizeType n, bool copy) {
    return value([&] { return document_.json.String(s, n, copy); });
  }
  bool StartObject() {
    return open(false, [&] { return document_.json.StartObject(); });
  }
  bool StartArray() {
    return open(true, [&] { return document_.json.StartArray(); });
  }
  bool Key(const Ch* s, SizeType n, bool copy) {
    Frame& parent = frames_.back();
    key_path_ = parent.recorded ? member_path(parent.path, std::string_view(s, n)) : std::string();
    key_recorded_ = parent.recorded && recorder_.records(key_path_);
    if (key_recorded_) recorder_.record(key_path_, line());
    return document_.json.Key(s, n, copy);
  }
  bool EndObject(SizeType members) {
    frames_.pop_back();
    return document_.json.EndObject(members);
  }
  bool EndArray(SizeType elements) {
    frames_.pop_back();
    return document_.json.EndArray(elements);
  }

 private:
  struct Frame {
    std::string path;
    bool recorded = false;
    bool array = false;
    std::size_t next = 0;  // the next element's index, in an array
  };

  // line: the line of the parser's position (it only moves forward).
  int line() {
    const char* at = begin_ + stream_.Tell();
    line_ += static_cast<int>(std::count(counted_, at, '\n'));
    counted_ = at;
    return line_;
  }
  // place: the path of the value starting now, recorded when it is an array element.
  std::pair<std::string, bool> place() {
    if (frames_.empty()) {
      document_.line = line();
      const bool recorded = recorder_.records("");
      if (recorded) recorder_.record("", document_.line);
      return {std::string(), recorded};
    }
    Frame& parent = frames_.back();
    if (!parent.array) return {std::move(key_path_), key_recorded_};
    std::string path = parent.recorded ? index_path(parent.path, parent.next) : std::string();
    ++parent.next;
    const bool recorded = parent.recorded && recorder_.records(path);
    if (recorded) recorder_.record(path, line());
    return {recorded ? std::move(path) : std::string(), recorded};
  }
  template <typename Forward>
  bool value(Forward forward) {
    place();
    return forward();
  }
  template <typename Forward>
  bool open(bool array, Forward forward) {
    auto [path, recorded] = place();
    frames_.push_back({std::move(path), recorded, array, 0});
    return forward();
  }

  YamlDocument& document_;
  const rapidjson::StringStream& stream_;
  const char* begin_;
  const char* counted_ = begin_;
  int line_;
  FieldLineRecorder recorder_;
  std::vector<Frame> frames_;
  std::string key_path_;
  bool key_recorded_ = false;
};

// parse_json_document: a `---` part that is one JSON object, parsed by RapidJSON: the
// same document the YAML path makes, without yaml-cpp's node tree (which costs many
// times the text: 5,000 Nodes as JSON took over 300 MiB). false when the part is not
// plain JSON; the YAML path then reads it and reports any error as it always has.
bool parse_json_document(std::string_view part, YamlConversion& conversion, ParsedYaml& out) {
  const auto first = part.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || part[first] != '{') return false;
  const std::string text(part);  // NUL-terminated for the parser
  YamlDocument document;
  FieldLines* const previous = conversion.field_lines;
  const std::size_t line_bytes = conversion.field_line_bytes;
  conversion.field_lines = &document.field_lines;
  rapidjson::StringStream stream(text.c_str());
  JsonDocumentBuilder builder(document, stream, text.c_str(), conversion);
  rapidjson::ParseResult result;
  const auto generate = [&](rapidjson::Document&) {
    rapidjson::Reader reader;
    result = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(stream, builder);
    return !result.IsError();
  };
  document.json.Populate(generate);
  conversion.field_lines = previous;
  if (result.IsError()) {
    conversion.field_line_bytes = line_bytes;  // the YAML path records them again
    return false;
  }
  out.documents.push_back(std::move(document));
  return true;
}

}  // namespace

ParsedYaml parse_yaml_text(std::string_view text, const std::string& file, std::size_t node_budget, bool with_lines) {
  ParsedYaml out;
  YamlConversion conversion;
  // One budget for the whole text, which every document draws on, twice a single text's
  // so that one alias bomb among the documents, held to its own part's budget, leaves the
  // others what they need: the rest of the file is still read and reported. (A given
  // `node_budget` is the caller's whole budget, drawn on as it is.)
  std::size_t remaining = node_budget != 0 ? node_budget : 2 * yaml_node_budget(text.size());
  conversion.field_line_bytes = with_lines ? 64 * text.size() + (std::size_t{1} << 20) : 0;
  for (const TextDocument& part : split_documents(text)) {
    const std::size_t share = node_budget != 0 ? remaining : std::min(remaining, yaml_node_budget(part.text.size()));
    conversion.budget = share;
    conversion.line_offset = part.first_line;
    if (!parse_json_document(part.text, conversion, out)) {
      try {
        const std::string part_text(part.text);
        refuse_stalling_text(part_text);
        for (const auto& node : YAML::LoadAll(part_text)) {
          if (node && !node.IsNull()) convert_document(node, conversion, out);
        }
      } catch (const YAML::Exception& e) {
        out.problems.push_back({file, part.first_line + e.mark.line + 1, "invalid YAML: " + e.msg});
      } catch (const ConversionError& e) {
        out.problems.push_back({file, e.line(), e.message()});
      }
    }
    remaining -= share - conversion.budget;  // what this document drew
  }
  return out;
}

std::vector<YamlDocument> load_yaml_documents(std::string_view text, const std::string& source) {
  ParsedYaml parsed = parse_yaml_text(text, source);
  if (!parsed.problems.empty()) throw ConfigError(parsed.problems.front().text());
  return std::move(parsed.documents);
}

}  // namespace kubegap
