#include "webhook/core/admission_codec.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <rapidjson/error/en.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "policies/text.h"
#include "webhook/core/json_reader.h"

namespace kubegap {
namespace {

using rapidjson::Value;

std::string_view view(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

DecodedReview not_a_review(std::string message) {
  DecodedReview out;
  out.status = DecodedReview::Status::kNotAReview;
  out.error = std::move(message);
  return out;
}

// SkippedMembers: passes the parser's events on to a document, except the members no
// check reads, which are often most of a review's bytes: request.oldObject (UPDATE), and in
// any metadata managedFields and the last-applied-configuration annotation (kubectl apply
// stores the whole object again there). They are still parsed, so a syntax error anywhere
// is still an error, but no DOM is built for them.
class SkippedMembers {
 public:
  using Ch = char;
  using SizeType = rapidjson::SizeType;
  explicit SkippedMembers(ReviewDocument& document) : document_(document) {}

  bool Null() {
    return scalar([&] { return document_.Null(); });
  }
  bool Bool(bool b) {
    return scalar([&] { return document_.Bool(b); });
  }
  bool Int(int i) {
    return scalar([&] { return document_.Int(i); });
  }
  bool Uint(unsigned u) {
    return scalar([&] { return document_.Uint(u); });
  }
  bool Int64(std::int64_t i) {
    return scalar([&] { return document_.Int64(i); });
  }
  bool Uint64(std::uint64_t u) {
    return scalar([&] { return document_.Uint64(u); });
  }
  bool Double(double d) {
    return scalar([&] { return document_.Double(d); });
  }
  bool RawNumber(const Ch* s, SizeType n, bool copy) {
    return scalar([&] { return document_.RawNumber(s, n, copy); });
  }
  bool String(const Ch* s, SizeType n, bool copy) {
    return scalar([&] { return document_.String(s, n, copy); });
  }
  bool StartObject() {
    return open([&] { return document_.StartObject(); });
  }
  bool StartArray() {
    return open([&] { return document_.StartArray(); });
  }
  bool Key(const Ch* s, SizeType n, bool copy) {
    if (skip_depth_ > 0) return true;
    const std::string_view key(s, n);
    if (skipped(parents_.back().place, key)) {
      skip_next_ = true;
      ++parents_.back().dropped;
      return true;
    }
    key_ = key;
    return document_.Key(s, n, copy);
  }
  bool EndObject(SizeType members) {
    return close([&](SizeType dropped) { return document_.EndObject(members - dropped); });
  }
  bool EndArray(SizeType elements) {
    return close([&](SizeType) { return document_.EndArray(elements); });
  }

 private:
  // Place: the members whose values may hold a skipped member. One byte per open object
  // or array: a deeply nested body costs no more here than in the parser's own stacks.
  enum class Place : std::uint8_t { kOther, kRequest, kMetadata, kAnnotations };
  struct Parent {
    Place place = Place::kOther;
    SizeType dropped = 0;  // members skipped in it
  };

  Place place_of(std::string_view key) const {
    if (key == "request" && parents_.size() == 1) return Place::kRequest;  // the envelope's
    if (key == "metadata") return Place::kMetadata;
    if (key == "annotations") return Place::kAnnotations;
    return Place::kOther;
  }
  static bool skipped(Place parent, std::string_view key) {
    return (parent == Place::kRequest && key == "oldObject") ||
           (parent == Place::kMetadata && key == "managedFields") ||
           (parent == Place::kAnnotations && key == "kubectl.kubernetes.io/last-applied-configuration");
  }
  template <typename Forward>
  bool scalar(Forward forward) {
    if (skip_depth_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    key_ = {};  // the next value in an array has no key
    return forward();
  }
  template <typename Forward>
  bool open(Forward forward) {
    if (skip_depth_ > 0 || skip_next_) {
      skip_next_ = false;
      ++skip_depth_;
      return true;
    }
    parents_.push_back({parents_.empty() ? Place::kOther : place_of(key_), 0});
    key_ = {};
    return forward();
  }
  template <typename Forward>
  bool close(Forward forward) {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    const SizeType dropped = parents_.back().dropped;
    parents_.pop_back();
    key_ = {};
    return forward(dropped);
  }

  ReviewDocument& document_;
  std::vector<Parent> parents_;
  std::string_view key_;
  std::size_t skip_depth_ = 0;
  bool skip_next_ = false;
};

// ReviewParse: the generator Document::Populate calls. Iterative: deep nesting cannot
// exhaust the stack.
struct ReviewParse {
  char* text;
  rapidjson::ParseResult result;
  bool operator()(ReviewDocument& document) {
    SkippedMembers handler(document);
    rapidjson::InsituStringStream stream(text);
    rapidjson::Reader reader;
    result = reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag>(stream, handler);
    return !result.IsError();
  }
};

// check_text: a NUL byte is never valid JSON (raw control characters are not allowed in
// strings), and both parsers below would take it for the end of the text. UTF-8 is checked
// once over the whole body (ASCII eight bytes at a time) instead of by the parser
// character by character: invalid bytes outside strings are syntax errors anyway.
std::optional<std::string> check_text(std::string_view body) {
  if (const auto nul = body.find('\0'); nul != std::string_view::npos) {
    return "invalid JSON at offset " + std::to_string(nul) + ": a NUL byte";
  }
  if (const auto bad = invalid_utf8_at(body); bad != std::string_view::npos) {
    return "invalid JSON at offset " + std::to_string(bad) + ": invalid UTF-8";
  }
  return std::nullopt;
}

std::string syntax_error(const rapidjson::ParseResult& result) {
  return "invalid JSON at offset " + std::to_string(result.Offset()) + ": " +
         rapidjson::GetParseError_En(result.Code());
}

// read_envelope: the request's fields from a parsed body.
DecodedReview read_envelope(ReviewStoragePtr storage) {
  const ReviewDocument* const document = &storage->document();
  if (!document->IsObject()) return not_a_review("body is not a JSON object");

  const auto [api_version, kind, request] = JsonReader::members<3>(document, {"apiVersion", "kind", "request"});
  if (kind == nullptr || !kind->IsString() || view(*kind) != "AdmissionReview") {
    return not_a_review("kind is not AdmissionReview");
  }
  if (api_version == nullptr || !api_version->IsString() ||
      (view(*api_version) != kAdmissionV1 && view(*api_version) != kAdmissionV1beta1)) {
    return not_a_review("apiVersion must be admission.k8s.io/v1 or admission.k8s.io/v1beta1");
  }
  if (request == nullptr || !request->IsObject()) {
    return not_a_review("request is missing or not an object");
  }
  const auto [uid, request_kind_member, sub_resource, operation, namespace_name, name, dry_run, object] =
      JsonReader::members<8>(request,
                             {"uid", "kind", "subResource", "operation", "namespace", "name", "dryRun", "object"});
  if (uid == nullptr || !uid->IsString() || uid->GetStringLength() == 0) {
    return not_a_review("request.uid is missing or not a non-empty string");
  }

  DecodedReview out;
  AdmissionRequest& r = out.request;
  r.api_version = view(*api_version);
  r.uid = view(*uid);

  // From here on the uid is known: a broken field makes the review unevaluable, not invalid.
  JsonReader reader;
  const JsonPath request_path{nullptr, "request"};
  const JsonPath kind_path{&request_path, "kind"};
  const Value* request_kind = reader.object(request_kind_member, kind_path);
  const auto [group, version, kind_name] = JsonReader::members<3>(request_kind, {"group", "version", "kind"});
  r.group = reader.string_view(group, JsonPath{&kind_path, "group"});
  r.version = reader.string_view(version, JsonPath{&kind_path, "version"});
  r.kind = reader.string_view(kind_name, JsonPath{&kind_path, "kind"});
  r.sub_resource = reader.string_view(sub_resource, JsonPath{&request_path, "subResource"});
  r.operation = reader.string_view(operation, JsonPath{&request_path, "operation"});
  r.namespace_name = reader.string_view(namespace_name, JsonPath{&request_path, "namespace"});
  r.name = reader.string_view(name, JsonPath{&request_path, "name"});
  r.dry_run = reader.boolean(dry_run, JsonPath{&request_path, "dryRun"});
  r.object = object;
  r.document = document;
  r.storage = std::move(storage);

  out.status = reader.ok() ? DecodedReview::Status::kOk : DecodedReview::Status::kUnreadableRequest;
  out.error = reader.error();
  return out;
}

}  // namespace

DecodedReview decode_review_dom(std::string_view body, const ReserveKept& /*reserve*/) {
  if (auto error = check_text(body)) return not_a_review(std::move(*error));
  ReviewStoragePtr storage = ReviewStorage::acquire(body);
  ReviewParse parse{storage->text(), {}};
  storage->document().Populate(parse);
  if (parse.result.IsError()) return not_a_review(syntax_error(parse.result));
  return read_envelope(std::move(storage));
}

DecodedReview decode_review(std::string_view body, const ReserveKept& reserve) {
  ReviewStoragePtr storage = ReviewStorage::acquire(body);
  switch (scan_review(storage->text(), body.size(), storage->document(), reserve)) {
    case ReviewScan::kAccepted:
      return read_envelope(std::move(storage));
    case ReviewScan::kOverBudget: {
      DecodedReview out;
      out.status = DecodedReview::Status::kOverBudget;
      out.error = "the decoded review would exceed the memory budget";
      return out;
    }
    case ReviewScan::kRejected:
      break;
  }
  // Why: a NUL or invalid UTF-8 first, as the DOM decoder says it; then RapidJSON's
  // reader, on a fresh copy, keeping nothing. The scan rejects exactly what those reject
  // (review_fuzz holds it to that); were they to accept, the DOM decoder answers rather
  // than a wrong error.
  storage.reset();
  if (auto error = check_text(body)) return not_a_review(std::move(*error));
  storage = ReviewStorage::acquire(body);  // a fresh copy: the scan unescaped in place
  rapidjson::InsituStringStream stream(storage->text());
  rapidjson::BaseReaderHandler<> nothing;
  rapidjson::Reader reader;
  const auto result = reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag>(stream, nothing);
  if (result.IsError()) return not_a_review(syntax_error(result));
  return decode_review_dom(body);
}

namespace {

// append_json_string: `text` as a JSON string, escaped byte for byte as RapidJSON's
// Writer escapes (", \\, \b \t \n \f \r, other C0 bytes as \u00XX in upper-case hex;
// everything else, UTF-8 included, as it is), so answers did not change when the response
// stopped going through the Writer, which handled a byte at a time. Runs of plain bytes
// are copied whole. Responses are mostly the findings' text, where nothing needs escaping.
// plain_end: json_plain_end, sixteen bytes at a time first where SSE2 is there (every
// response's text goes through this). A control byte is one whose unsigned maximum with
// 0x1f is 0x1f.
std::size_t plain_end(std::string_view text, std::size_t from = 0) {
  std::size_t i = from;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i controls = _mm_set1_epi8(0x1f);
  for (; i + 16 <= text.size(); i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i));
    const __m128i special = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(x, controls), controls),
                                         _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)));
    if (const int mask = _mm_movemask_epi8(special); mask != 0) {
      return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
#endif
  return json_plain_end(text, i);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t plain = 0;  // text[plain, i) is copied as it is, in one append
  for (std::size_t i = plain_end(text); i < text.size(); i = plain_end(text, i + 1)) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    out += '\\';
    switch (c) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '\b':
        out += 'b';
        break;
      case '\t':
        out += 't';
        break;
      case '\n':
        out += 'n';
        break;
      case '\f':
        out += 'f';
        break;
      case '\r':
        out += 'r';
        break;
      default: {
        constexpr std::string_view kHex = "0123456789ABCDEF";
        const char escape[] = {'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(escape, sizeof escape);
      }
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

std::string encode_response(std::string_view api_version, std::string_view uid, const AdmissionResponse& response) {
  // One allocation: the text plus room for its quotes and a few escapes.
  std::size_t size = 96 + api_version.size() + uid.size();
  for (const auto& warning : response.warnings) size += warning.size() + 4;
  for (const auto& [key, value] : response.audit_annotations) size += key.size() + value.size() + 8;
  std::string out;
  out.reserve(size + size / 16);
  out += R"({"apiVersion":)";
  append_json_string(out, api_version);
  out += R"(,"kind":"AdmissionReview","response":{"uid":)";
  append_json_string(out, uid);
  out += R"(,"allowed":true)";
  if (!response.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (std::size_t i = 0; i < response.warnings.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, response.warnings[i]);
    }
    out += ']';
  }
  if (!response.audit_annotations.empty()) {
    // Sorted by key, as a JSON object is conventionally written (and as the goldens are),
    // equal keys in the order given: the few annotations (one per check, "class", "error")
    // are ordered through their indexes by insertion, on the stack, with no allocation.
    const auto& annotations = response.audit_annotations;
    constexpr std::size_t kOnStack = 16;
    std::array<std::uint32_t, kOnStack> on_stack{};
    std::vector<std::uint32_t> on_heap;
    std::span<std::uint32_t> order(on_stack.data(), std::min(annotations.size(), kOnStack));
    if (annotations.size() > kOnStack) {
      on_heap.resize(annotations.size());
      order = on_heap;
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      std::size_t j = i;
      for (; j > 0 && annotations[i].first < annotations[order[j - 1]].first; --j) order[j] = order[j - 1];
      order[j] = static_cast<std::uint32_t>(i);
    }
    out += R"(,"auditAnnotations":{)";
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, annotations[order[i]].first);
      out += ':';
      append_json_string(out, annotations[order[i]].second);
    }
    out += '}';
  }
  out += "}}";
  return out;
}

std::string encode_error(std::string_view message) {
  std::string out = R"({"error":)";
  append_json_string(out, message);
  out += '}';
  return out;
}

}  // namespace kubegap
