// AdmissionReview decoding (the envelope, bad input) and response encoding (escaping,
// echoing, what is never sent). The handler-level behaviour is in review_handler_test.
#include "webhook/core/admission_codec.h"

#include <gtest/gtest.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/webhook/test_util.h"
#include "webhook/core/json_reader.h"
#include "webhook/core/review_scan.h"

namespace kgtest {
namespace {

using kubegap::AdmissionResponse;
using kubegap::decode_review;
using kubegap::DecodedReview;
using kubegap::encode_error;
using kubegap::encode_response;
using Status = kubegap::DecodedReview::Status;

std::string review_with_request(const std::string& request_json,
                                const std::string& api_version = "admission.k8s.io/v1") {
  return R"({"apiVersion":")" + api_version + R"(","kind":"AdmissionReview","request":)" + request_json + "}";
}

std::string fixture(const char* name) {
  const auto text = read_text(fixture_path(std::string("reviews/") + name));
  EXPECT_TRUE(text.has_value()) << name;
  return text.value_or("");
}

// ---------------------------------------------------------------------------------------
// Decoding the envelope

TEST(DecodeReview, ReadsEveryEnvelopeFieldOfARealPodCreate) {
  const DecodedReview decoded = decode_review(fixture("gpu-pod-gaps.json"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.error, "");
  const auto& r = decoded.request;
  EXPECT_EQ(r.api_version, "admission.k8s.io/v1");
  EXPECT_EQ(r.uid, "0f4e1b6a-3c1d-4a8e-9b52-7d2c1e9a4f10");
  EXPECT_EQ(r.group, "");
  EXPECT_EQ(r.version, "v1");
  EXPECT_EQ(r.kind, "Pod");
  EXPECT_EQ(r.sub_resource, "");
  EXPECT_EQ(r.operation, "CREATE");
  EXPECT_EQ(r.namespace_name, "ml-research");
  EXPECT_EQ(r.name, "llm-pretrain-0");
  EXPECT_FALSE(r.dry_run);
  ASSERT_NE(r.object, nullptr);
  ASSERT_TRUE(r.object->IsObject());
  // `object` points into the document the request owns.
  EXPECT_EQ(str((*r.object)["metadata"]["name"]), "llm-pretrain-0");
}

TEST(DecodeReview, KeepsTheV1beta1ApiVersionForTheAnswer) {
  const DecodedReview decoded = decode_review(fixture("gpu-pod-v1beta1.json"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.api_version, "admission.k8s.io/v1beta1");
}

TEST(DecodeReview, NullObjectDecodesAsNoObject) {
  const DecodedReview decoded = decode_review(fixture("pod-null-object.json"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.object, nullptr);
}

TEST(DecodeReview, AbsentObjectDecodesAsNoObject) {
  const DecodedReview decoded = decode_review(
      review_with_request(R"({"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE"})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.object, nullptr);
}

TEST(DecodeReview, ReadsSubResourceAndDryRun) {
  const DecodedReview status = decode_review(fixture("pod-status-subresource.json"));
  ASSERT_EQ(status.status, Status::kOk) << status.error;
  EXPECT_EQ(status.request.sub_resource, "status");
  EXPECT_EQ(status.request.operation, "UPDATE");

  const DecodedReview dry = decode_review(fixture("gpu-pod-dry-run.json"));
  ASSERT_EQ(dry.status, Status::kOk) << dry.error;
  EXPECT_TRUE(dry.request.dry_run);
}

TEST(DecodeReview, GenerateNamePodHasAnEmptyRequestName) {
  const DecodedReview decoded = decode_review(fixture("gpu-pod-generate-name.json"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.name, "");
}

TEST(DecodeReview, OnlyAUidIsEnoughForAReview) {
  const DecodedReview decoded = decode_review(review_with_request(R"({"uid":"only-uid"})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.uid, "only-uid");
  EXPECT_EQ(decoded.request.kind, "");
  EXPECT_EQ(decoded.request.operation, "");
  EXPECT_EQ(decoded.request.object, nullptr);
}

TEST(DecodeReview, UnknownMembersAreIgnored) {
  const DecodedReview decoded = decode_review(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","future":[1,{"x":null}],)"
      R"("request":{"uid":"u","futureField":{"a":[true]},"kind":{"group":"","version":"v1","kind":"Pod","extra":1}}})");
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.kind, "Pod");
}

TEST(DecodeReview, NullEnvelopeMembersReadAsAbsent) {
  const DecodedReview decoded = decode_review(review_with_request(
      R"({"uid":"u","kind":null,"subResource":null,"namespace":null,"name":null,"dryRun":null,"operation":null})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.namespace_name, "");
  EXPECT_FALSE(decoded.request.dry_run);
}

// JsonReader::members (one pass) reads each name as member() does: the first member of a
// repeated name counts, even when it is null; a name absent or in a non-object is nullptr.
TEST(DecodeReview, MembersReadEachNameAsMemberDoes) {
  rapidjson::Document doc;
  doc.Parse(R"({"a":1,"b":null,"a":2,"b":3,"c":"x"})");
  ASSERT_FALSE(doc.HasParseError());
  const auto [a, b, c, d] = kubegap::JsonReader::members<4>(&doc, {"a", "b", "c", "d"});
  EXPECT_EQ(a, kubegap::JsonReader::member(&doc, "a"));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->GetInt(), 1);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(b, kubegap::JsonReader::member(&doc, "b"));
  EXPECT_EQ(c, kubegap::JsonReader::member(&doc, "c"));
  EXPECT_EQ(d, nullptr);
  const auto [none] = kubegap::JsonReader::members<1>(&doc["c"], {"a"});
  EXPECT_EQ(none, nullptr);
  // In a review: the first of two operations is the one read.
  const DecodedReview decoded =
      decode_review(review_with_request(R"({"uid":"u","operation":"CREATE","operation":"DELETE"})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.operation, "CREATE");
}

TEST(DecodeReview, UidWithEscapesAndUnicodeIsReadExactly) {
  const DecodedReview decoded = decode_review(review_with_request(R"({"uid":"a\"b\\c\/d \u00fc\u65e5 \ud83d\ude80"})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.uid, "a\"b\\c/d \xC3\xBC\xE6\x97\xA5 \xF0\x9F\x9A\x80");
}

// A broken envelope member after a readable uid: the review is answered (200) with an
// `error` annotation, so the error names the JSON path.
struct UnreadableCase {
  const char* name;
  const char* request;
  const char* error;
};

class DecodeUnreadableRequest : public ::testing::TestWithParam<UnreadableCase> {};

TEST_P(DecodeUnreadableRequest, KeepsTheUidAndNamesTheBrokenMember) {
  const DecodedReview decoded = decode_review(review_with_request(GetParam().request));
  EXPECT_EQ(decoded.status, Status::kUnreadableRequest);
  EXPECT_EQ(decoded.request.uid, "u-42");
  EXPECT_EQ(decoded.request.api_version, "admission.k8s.io/v1");
  EXPECT_EQ(decoded.error, GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    EnvelopeTypeErrors, DecodeUnreadableRequest,
    ::testing::Values(
        UnreadableCase{"kind_is_a_string", R"({"uid":"u-42","kind":"Pod"})", "request.kind: expected an object"},
        UnreadableCase{"kind_kind_is_a_number", R"({"uid":"u-42","kind":{"group":"","version":"v1","kind":7}})",
                       "request.kind.kind: expected a string"},
        UnreadableCase{"group_is_an_array", R"({"uid":"u-42","kind":{"group":[],"version":"v1","kind":"Pod"}})",
                       "request.kind.group: expected a string"},
        UnreadableCase{"operation_is_a_number", R"({"uid":"u-42","operation":1})",
                       "request.operation: expected a string"},
        UnreadableCase{"namespace_is_an_object", R"({"uid":"u-42","namespace":{}})",
                       "request.namespace: expected a string"},
        UnreadableCase{"sub_resource_is_a_bool", R"({"uid":"u-42","subResource":true})",
                       "request.subResource: expected a string"},
        UnreadableCase{"dry_run_is_a_string", R"({"uid":"u-42","dryRun":"true"})",
                       "request.dryRun: expected a boolean"}),
    [](const auto& info) { return std::string(info.param.name); });

// Bodies that are not an AdmissionReview at all: 400.
struct NotAReviewCase {
  const char* name;
  std::string body;
  const char* error_contains;
};

class DecodeNotAReview : public ::testing::TestWithParam<NotAReviewCase> {};

TEST_P(DecodeNotAReview, IsRejectedWithAReason) {
  const DecodedReview decoded = decode_review(GetParam().body);
  EXPECT_EQ(decoded.status, Status::kNotAReview);
  EXPECT_NE(decoded.error.find(GetParam().error_contains), std::string::npos) << decoded.error;
}

const std::string kValidRequest = R"({"uid":"u"})";

INSTANTIATE_TEST_SUITE_P(
    BadBodies, DecodeNotAReview,
    ::testing::Values(
        NotAReviewCase{"empty_body", "", "invalid JSON"}, NotAReviewCase{"not_json", "hello, webhook", "invalid JSON"},
        NotAReviewCase{"truncated", R"({"apiVersion":"admission.k8s.io/v1","kind":"Adm)", "invalid JSON"},
        NotAReviewCase{"trailing_garbage", review_with_request(R"({"uid":"u"})") + " {}", "invalid JSON"},
        NotAReviewCase{"json_array", "[]", "not a JSON object"},
        NotAReviewCase{"json_string", R"("AdmissionReview")", "not a JSON object"},
        NotAReviewCase{"json_null", "null", "not a JSON object"},
        NotAReviewCase{"kind_missing", R"({"apiVersion":"admission.k8s.io/v1","request":{"uid":"u"}})",
                       "kind is not AdmissionReview"},
        NotAReviewCase{"kind_other", R"({"apiVersion":"admission.k8s.io/v1","kind":"ConfigMap","request":{"uid":"u"}})",
                       "kind is not AdmissionReview"},
        NotAReviewCase{"kind_not_a_string",
                       R"({"apiVersion":"admission.k8s.io/v1","kind":["AdmissionReview"],"request":{"uid":"u"}})",
                       "kind is not AdmissionReview"},
        NotAReviewCase{"api_version_unknown", review_with_request(kValidRequest, "admission.k8s.io/v2"),
                       "apiVersion must be"},
        NotAReviewCase{"api_version_other_group", review_with_request(kValidRequest, "v1"), "apiVersion must be"},
        NotAReviewCase{"api_version_missing", R"({"kind":"AdmissionReview","request":{"uid":"u"}})",
                       "apiVersion must be"},
        NotAReviewCase{"request_missing", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
                       "request is missing"},
        NotAReviewCase{"request_null", review_with_request("null"), "request is missing"},
        NotAReviewCase{"request_array", review_with_request(R"([{"uid":"u"}])"), "request is missing"},
        NotAReviewCase{"uid_missing", review_with_request(R"({"operation":"CREATE"})"), "request.uid"},
        NotAReviewCase{"uid_empty", review_with_request(R"({"uid":""})"), "request.uid"},
        NotAReviewCase{"uid_number", review_with_request(R"({"uid":12345})"), "request.uid"},
        NotAReviewCase{"uid_null", review_with_request(R"({"uid":null})"), "request.uid"},
        NotAReviewCase{"invalid_utf8_byte", review_with_request("{\"uid\":\"u\",\"name\":\"bad\xFF\"}"),
                       "invalid JSON"},
        NotAReviewCase{"overlong_utf8", review_with_request("{\"uid\":\"u\",\"name\":\"\xC0\xAF\"}"), "invalid JSON"},
        NotAReviewCase{"utf8_surrogate_bytes", review_with_request("{\"uid\":\"u\",\"name\":\"\xED\xA0\x80\"}"),
                       "invalid JSON"},
        NotAReviewCase{"lone_surrogate_escape", review_with_request(R"({"uid":"u","name":"\ud800"})"), "invalid JSON"},
        NotAReviewCase{"deep_unclosed_arrays", std::string(100000, '['), "invalid JSON"},
        NotAReviewCase{"deep_closed_arrays", std::string(100000, '[') + std::string(100000, ']'), "not a JSON object"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DecodeReview, DeepNestingInsideTheObjectDoesNotExhaustTheStack) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const DecodedReview decoded = decode_review(review_with_request(
      R"({"uid":"deep","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"status":)" +
      deep + "}}"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(decoded.request.uid, "deep");
  ASSERT_NE(decoded.request.object, nullptr);
}

// What no check reads is parsed (so it must be valid JSON) but not kept: the old object of
// an UPDATE, managedFields and kubectl's last-applied copy of the whole object.
TEST(DecodeReview, DropsOldObjectManagedFieldsAndLastAppliedButKeepsTheRest) {
  const DecodedReview decoded = decode_review(review_with_request(
      R"({"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"UPDATE",)"
      R"("oldObject":{"metadata":{"name":"old"},"spec":{"containers":[{"name":"c"}]}},)"
      R"("object":{"metadata":{"name":"p","managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}],)"
      R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"kind\":\"Pod\"}",)"
      R"("kubegap.io/exempt":"zone-spread"},"labels":{"managedFields":"kept"}},)"
      R"("spec":{"template":{"metadata":{"managedFields":[1]}},"oldObject":{"kept":true},)"
      R"("list":[{"metadata":null},{"managedFields":"kept"},{"annotations":null},)"
      R"({"kubectl.kubernetes.io/last-applied-configuration":"kept"}]}}})"));
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  const auto& request = decoded.request.document->operator[]("request");
  EXPECT_FALSE(request.HasMember("oldObject"));
  ASSERT_NE(decoded.request.object, nullptr);
  const auto& metadata = (*decoded.request.object)["metadata"];
  EXPECT_STREQ(metadata["name"].GetString(), "p");
  EXPECT_FALSE(metadata.HasMember("managedFields"));
  ASSERT_TRUE(metadata["annotations"].IsObject());
  EXPECT_FALSE(metadata["annotations"].HasMember("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_STREQ(metadata["annotations"]["kubegap.io/exempt"].GetString(), "zone-spread");
  EXPECT_EQ(metadata["annotations"].MemberCount(), 1u);
  // Only those members in those places: a label of that name, a template's metadata and
  // an `oldObject` deeper in the object are other things.
  EXPECT_STREQ(metadata["labels"]["managedFields"].GetString(), "kept");
  EXPECT_FALSE((*decoded.request.object)["spec"]["template"]["metadata"].HasMember("managedFields"));
  EXPECT_TRUE((*decoded.request.object)["spec"]["oldObject"]["kept"].GetBool());
  // An array element's members are judged by where the element is, not by the last key
  // seen inside the element before it.
  const auto& list = (*decoded.request.object)["spec"]["list"];
  ASSERT_EQ(list.Size(), 4u);
  EXPECT_STREQ(list[1]["managedFields"].GetString(), "kept");
  EXPECT_STREQ(list[3]["kubectl.kubernetes.io/last-applied-configuration"].GetString(), "kept");
}

TEST(DecodeReview, ASyntaxErrorInsideADroppedMemberIsStillAnError) {
  const DecodedReview decoded =
      decode_review(review_with_request(R"({"uid":"u","oldObject":{"metadata":{"name":}},"object":{}})"));
  EXPECT_EQ(decoded.status, Status::kNotAReview);
  EXPECT_NE(decoded.error.find("invalid JSON at offset"), std::string::npos) << decoded.error;
}

TEST(DecodeReview, ARealApplyDecodesLikeItsObjectWithoutTheCopies) {
  const auto text = read_text(source_path("tests/bench/reviews/gpu-pod-applied.json"));
  ASSERT_TRUE(text.has_value());
  ASSERT_NE(text->find("managedFields"), std::string::npos);
  const DecodedReview decoded = decode_review(*text);
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  const auto& metadata = (*decoded.request.object)["metadata"];
  EXPECT_FALSE(metadata.HasMember("managedFields"));
  EXPECT_FALSE(metadata["annotations"].HasMember("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_TRUE(metadata.HasMember("name"));
}

// ---------------------------------------------------------------------------------------
// The one-pass decoder against the DOM decoder (decode_review_dom, the reference)

// written: a value as compact JSON (how the two decoders' kept values are compared),
// without its status (the DOM decoder keeps an object's status; no check reads it).
std::string written(const rapidjson::Value* value) {
  if (value == nullptr) return "<none>";
  rapidjson::Document copy;
  copy.CopyFrom(*value, copy.GetAllocator());
  // Every status, in place: RemoveMember moves the last member into the hole, and the
  // order of the others is part of what the decoders must agree on.
  while (copy.IsObject() && copy.FindMember("status") != copy.MemberEnd()) copy.EraseMember(copy.FindMember("status"));
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  copy.Accept(writer);
  return buffer.GetString();
}

void expect_same_decode(const std::string& body) {
  const DecodedReview fast = decode_review(body);
  const DecodedReview dom = kubegap::decode_review_dom(body);
  EXPECT_EQ(fast.status, dom.status) << body;
  EXPECT_EQ(fast.error, dom.error) << body;
  EXPECT_EQ(fast.request.uid, dom.request.uid);
  EXPECT_EQ(fast.request.kind, dom.request.kind);
  EXPECT_EQ(fast.request.operation, dom.request.operation);
  EXPECT_EQ(fast.request.namespace_name, dom.request.namespace_name);
  EXPECT_EQ(fast.request.dry_run, dom.request.dry_run);
  EXPECT_EQ(written(fast.request.object), written(dom.request.object)) << body;
}

std::string with_object(const std::string& object, const std::string& extra = "") {
  return review_with_request(R"({"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",)" +
                             extra + R"("object":)" + object + "}");
}

// A status among the object's members (the fuzzer's find: the API server writes it last)
// is dropped by the one-pass decoder where it is; the members after it keep their order.
TEST(DecodeReviewOnePass, AStatusBeforeOtherMembersLeavesTheirOrder) {
  expect_same_decode(
      with_object(R"({"kind":"Job","status":{"active":1},"operation":"x","object":{"a":1},"status":2})"));
  const DecodedReview fast = decode_review(with_object(R"({"a":1,"status":{},"b":2,"c":3})"));
  ASSERT_EQ(fast.status, Status::kOk) << fast.error;
  EXPECT_EQ(written(fast.request.object), R"({"a":1,"b":2,"c":3})");
}

// Syntax errors read exactly as RapidJSON's reader says them, wherever they are: in a
// member that is kept, in one that is skipped, in the envelope.
TEST(DecodeReviewOnePass, SyntaxErrorsReadAsTheReaderSaysThem) {
  const std::vector<std::string> broken = {
      R"("a\x")", R"("a\u12")", R"("\ud800")", R"("\ud800\u0041")", R"("\ud800\\")", "\"a\tb\"", "01", "-", "1.",
      "1.e3", "1e", "1e+", "1e400", "-1e400", "[1,]", R"({"a":1,})", R"({"a" 1})", R"({"a":1 "b":2})", R"({1:2})",
      "nul", "tru", "fals", "[1 2]", "[", R"({"a":)", "\"unterminated", "+1", ".5", "1e1000000", "[-]", R"({"a\q":1})",
      R"({"a":1}})", "[1]]", "--1", "0x10", "1.5.5",
      // after an inner container closes, in the skip loop
      "[[]1]", "[{},]", R"({"a":[] "b":1})", "[[1,]]", R"([{"a":{}}}])", "[{]"};
  for (const auto& b : broken) {
    SCOPED_TRACE(b);
    expect_same_decode(with_object(R"({"spec":)" + b + "}"));                        // kept
    expect_same_decode(with_object("{}", R"("userInfo":)" + b + ","));               // skipped
    expect_same_decode(with_object(R"({"status":)" + b + "}"));                      // skipped in the object
    expect_same_decode(R"({"apiVersion":"admission.k8s.io/v1","kind":)" + b + "}");  // the envelope
    expect_same_decode(b);                                                           // the whole body
    EXPECT_EQ(decode_review(with_object(R"({"spec":)" + b + "}")).status, Status::kNotAReview);
  }
  // A NUL or invalid UTF-8 anywhere, even after a complete document, in a skipped member
  // or outside any string: the same message ("a NUL byte", "invalid UTF-8") at the same offset.
  const std::string review = with_object("{}");
  for (const std::string& b :
       {review + std::string(1, '\0') + "x", review.substr(0, 20) + std::string(1, '\0') + review.substr(20),
        with_object("{}", "\"userInfo\":\"bad\xff\","), with_object("{\"name\":\"\xc0\xaf\"}"),
        with_object("{\"name\":\"\xed\xa0\x80\"}"), with_object("{\"name\":1\xc3\xa9}"),
        with_object("{\"name\":\"\xf4\x90\x80\x80\"}"), with_object("{\"name\":\"\xe2\x82\"}")}) {
    SCOPED_TRACE(b);
    expect_same_decode(b);
    EXPECT_EQ(decode_review(b).status, Status::kNotAReview);
  }
}

// scan_accepts: whether the scan alone takes `body` (decode_review would hide a refusal:
// it asks the DOM decoder then).
bool scan_accepts(const std::string& body) {
  std::vector<char> text(body.begin(), body.end());
  text.resize(body.size() + kubegap::kTextPadding, '\0');
  kubegap::ReviewDocument document;
  return kubegap::scan_review(text.data(), body.size(), document, {}) == kubegap::ReviewScan::kAccepted;
}

bool reader_accepts(const std::string& body) {
  rapidjson::StringStream stream(body.c_str());
  rapidjson::BaseReaderHandler<> nothing;
  rapidjson::Reader reader;
  return !reader.Parse<rapidjson::kParseIterativeFlag>(stream, nothing).IsError();
}

// Skipped strings are read 32 bytes at a time from their masks once they hold an escape:
// backslash runs of every length, escapes that straddle two blocks, \u escapes, invalid
// escapes, control bytes and UTF-8, each at every offset around the blocks, are taken or
// refused exactly as RapidJSON's reader does, skipped or kept.
TEST(DecodeReviewOnePass, EscapesAcrossTheSkippedStringBlocksReadAsTheReaderReadsThem) {
  const std::vector<std::string> pieces = {
      R"(\")",     R"(\\)", R"(\\\")", R"(\\\\)",    R"(\\\\\")", R"(\n)", R"(\/)", R"(\u0041)", R"(\ud83d\ude00)",
      R"(\ud800)", R"(\q)", "\\\x01",  "\\\xc3\xa9", "\xc3\xa9",  "\x01",  R"(\)",  R"(\\\\\\)", "\""};
  int accepted = 0;
  int refused = 0;
  for (const std::size_t first : {0, 5}) {
    for (const auto& a : pieces) {
      for (std::size_t gap = 0; gap <= 40; ++gap) {
        for (const auto& b : pieces) {
          const std::string text = std::string(first, 'x') + a + std::string(gap, 'y') + b + "z";
          for (const std::string& body : {with_object("{}", R"("userInfo":{"u":")" + text + R"("},)"),
                                          with_object(R"({"spec":")" + text + R"("})")}) {
            const bool expected = reader_accepts(body);
            ASSERT_EQ(scan_accepts(body), expected) << body;
            (expected ? accepted : refused) += 1;
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 1000);  // both kinds of case are there
  EXPECT_GT(refused, 1000);
  expect_same_decode(with_object(R"({"spec":")" + std::string(40, 'x') + R"(\\\"\u0041\\")" + R"("})"));
}

// What is kept reads exactly as the DOM decoder reads it: numbers typed as RapidJSON
// types them, escapes unescaped, surrogate pairs joined, lone low surrogates kept.
TEST(DecodeReviewOnePass, KeptValuesEqualTheDomDecodersValues) {
  const std::vector<std::string> values = {"0",
                                           "-0",
                                           "7",
                                           "-7",
                                           "2147483647",
                                           "2147483648",
                                           "-2147483648",
                                           "-2147483649",
                                           "4294967295",
                                           "4294967296",
                                           "999999999999999999",
                                           "-999999999999999999",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "18446744073709551615",
                                           "18446744073709551616",
                                           "-9223372036854775808",
                                           "-9223372036854775809",
                                           "1.5",
                                           "-0.0",
                                           "1e308",
                                           "1E-400",
                                           "12.5e+3",
                                           "123456789012345678901234567890",
                                           R"("plain")",
                                           R"("a\"b\\c\/d\b\f\n\r\t")",
                                           R"("\u0041\u00e9\u20ac")",
                                           R"("\ud83d\ude00")",
                                           R"("\udc00 lone low")",
                                           "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
                                           R"("x\u0026\u0026y")",
                                           R"("\u0000 NUL")",
                                           "true",
                                           "false",
                                           "null",
                                           "[]",
                                           "{}",
                                           R"([1,"two",{"three":[3]}])",
                                           R"({"a\u0062":1})"};
  for (const auto& v : values) {
    SCOPED_TRACE(v);
    expect_same_decode(with_object(R"({"metadata":{"name":"p","labels":{"k":)" + v + R"(}},"spec":{"v":)" + v +
                                   R"(,"list":[)" + v + "," + v + "]}}"));
  }
  expect_same_decode(*read_text(source_path("tests/bench/reviews/gpu-pod-applied.json")));
  int fixtures = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("reviews"))) {
    const auto text = read_text(entry.path().string());
    ASSERT_TRUE(text.has_value()) << entry.path();
    expect_same_decode(*text);
    ++fixtures;
  }
  EXPECT_GT(fixtures, 10);
}

// Members nobody reads are skipped as they are read: not kept, whatever their size.
TEST(DecodeReviewOnePass, KeepsOnlyWhatTheEnvelopeAndTheChecksRead) {
  const DecodedReview decoded = decode_review(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","extra":[1,2,3],)"
      R"("request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod","other":1},"resource":{"resource":"pods"},)"
      R"("userInfo":{"username":"alice"},"options":{"dryRun":["All"]},"operation":"CREATE",)"
      R"("object":{"metadata":{"name":"p"},"spec":{"containers":[]},"status":{"phase":"Pending"}}}})");
  ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
  EXPECT_EQ(written(decoded.request.document),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
            R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",)"
            R"("object":{"metadata":{"name":"p"},"spec":{"containers":[]}}}})");
}

// ones: a JSON array of `n` ones.
std::string ones(int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += i ? ",1" : "1";
  return out + "]";
}

// A decode keeps its text and values in the thread's spare storage once the last decode
// is done (no allocation of its own in steady state), never while it is still in use.
TEST(ReviewStorage, ADecodeReusesTheThreadsSpareOnlyOnceTheLastIsDone) {
  const auto pod_review = [](std::string_view uid) {
    return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":")" + std::string(uid) +
           R"(","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",)"
           R"("object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}}})";
  };
  const char* first_text = nullptr;
  const char* second_text = nullptr;
  {
    const DecodedReview first = decode_review(pod_review("first"));
    ASSERT_EQ(first.status, Status::kOk) << first.error;
    first_text = first.request.storage->text();
    // In use: a second decode on this thread gets storage of its own.
    const std::size_t created = kubegap::ReviewStorage::created_on_this_thread();
    const DecodedReview second = decode_review(pod_review("second"));
    EXPECT_EQ(kubegap::ReviewStorage::created_on_this_thread(), created + 1);
    ASSERT_EQ(second.status, Status::kOk) << second.error;
    second_text = second.request.storage->text();
    EXPECT_NE(second_text, first_text);
    EXPECT_STREQ((*first.request.document)["request"]["uid"].GetString(), "first");
    EXPECT_STREQ((*second.request.document)["request"]["uid"].GetString(), "second");
  }
  // Both done: the next decode takes a spare and reads its own body, not the last one's.
  const std::size_t created = kubegap::ReviewStorage::created_on_this_thread();
  const DecodedReview third = decode_review(pod_review("third"));
  EXPECT_EQ(kubegap::ReviewStorage::created_on_this_thread(), created);  // nothing made
  ASSERT_EQ(third.status, Status::kOk) << third.error;
  EXPECT_EQ(third.request.uid, "third");
  EXPECT_TRUE(third.request.storage->text() == first_text || third.request.storage->text() == second_text);
  EXPECT_STREQ((*third.request.document)["request"]["object"]["spec"]["containers"][0]["image"].GetString(), "i");
}

// The parse stack's block is given to one stack at a time, back once freed or outgrown;
// what outgrows it moves to the heap with its bytes.
TEST(ReviewStorage, TheParseStackBlockGoesToOneStackAtATime) {
  alignas(16) static char block[1024];
  kubegap::ParseStackAllocator allocator(block, sizeof block);
  auto* first = static_cast<char*>(allocator.Malloc(100));
  auto* second = static_cast<char*>(allocator.Malloc(100));
  EXPECT_EQ(first, block + 16);
  EXPECT_NE(second, first);  // the block is in use: the heap
  kubegap::ParseStackAllocator::Free(second);
  kubegap::ParseStackAllocator::Free(first);
  first = static_cast<char*>(allocator.Malloc(100));
  EXPECT_EQ(first, block + 16);  // freed: given out again
  first[0] = 'x';
  auto* grown = static_cast<char*>(allocator.Realloc(first, 100, 4096));
  EXPECT_NE(grown, first);
  EXPECT_EQ(grown[0], 'x');
  EXPECT_EQ(allocator.Malloc(100), block + 16);  // outgrown: the block is free again
  kubegap::ParseStackAllocator::Free(grown);
  kubegap::ParseStackAllocator::Free(block + 16);
}

// A body over kKeptTextCapacity is decoded, but its text is not kept as the spare; a
// review whose values outgrow the first chunk is read whole, and the next one too.
TEST(ReviewStorage, ALargeBodyIsNotKeptAfterItsReview) {
  const std::string big =
      with_object(R"({"metadata":{"name":"p","labels":{"a":")" +
                  std::string(2 * kubegap::ReviewStorage::kKeptTextCapacity, 'x') + R"("}},"spec":{"containers":[]}})");
  {
    const DecodedReview decoded = decode_review(big);
    ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
    EXPECT_GE(decoded.request.storage->text_capacity(), big.size());
  }
  const std::string many = with_object(R"({"metadata":{"name":"p"},"spec":{"containers":[]},"x":)" + ones(20000) + "}");
  for (int i = 0; i < 2; ++i) {
    const DecodedReview decoded = decode_review(many);
    ASSERT_EQ(decoded.status, Status::kOk) << decoded.error;
    EXPECT_LT(decoded.request.storage->text_capacity(), kubegap::ReviewStorage::kKeptTextCapacity);
    EXPECT_EQ((*decoded.request.object)["x"].Size(), 20000u);
  }
}

// A container where the envelope wants a scalar or an object is kept empty: the type
// checks say what they said, and nothing of it is held.
TEST(DecodeReviewOnePass, AContainerWhereTheEnvelopeWantsAScalarIsKeptEmpty) {
  const std::string many = ones(100000);
  for (const std::string& body :
       {R"({"apiVersion":"admission.k8s.io/v1","kind":)" + many + "}", review_with_request(many),
        review_with_request(R"({"uid":)" + many + "}"), review_with_request(R"({"uid":"u","name":)" + many + "}"),
        review_with_request(R"({"uid":"u","kind":)" + many + "}"), with_object(many), many}) {
    SCOPED_TRACE(body.substr(0, 80));
    const DecodedReview fast = decode_review(body), dom = kubegap::decode_review_dom(body);
    EXPECT_EQ(fast.status, dom.status);
    EXPECT_EQ(fast.error, dom.error);
    std::size_t asked = 0;
    (void)decode_review(body, [&](std::size_t kept) {
      asked = std::max(asked, kept);
      return true;
    });
    EXPECT_LT(asked, std::size_t{64} << 10) << "nothing of the array is kept";
  }
}

// What the decode keeps is asked of the budget as it grows; a refusal stops it.
TEST(DecodeReviewOnePass, AsksTheBudgetForWhatItKeepsAndStopsWhenRefused) {
  const std::string many = ones(100000);
  const std::string body = with_object(R"({"spec":{"list":)" + many + "}}");
  std::size_t asked = 0;
  EXPECT_EQ(decode_review(body,
                          [&](std::size_t kept) {
                            asked = std::max(asked, kept);
                            return true;
                          })
                .status,
            Status::kOk);
  EXPECT_GE(asked, 95000 * kubegap::kKeptValueBytes) << "each kept value is counted";
  const DecodedReview refused = decode_review(body, [](std::size_t kept) { return kept < (1u << 20); });
  EXPECT_EQ(refused.status, Status::kOverBudget);
  EXPECT_NE(refused.error.find("memory budget"), std::string::npos) << refused.error;
  // Deep nesting in a skipped member holds a frame per level: that is asked for too.
  std::size_t deep_asked = 0;
  (void)decode_review(with_object("{}", R"("userInfo":)" + std::string(300000, '[') + std::string(300000, ']') + ","),
                      [&](std::size_t kept) {
                        deep_asked = std::max(deep_asked, kept);
                        return true;
                      });
  EXPECT_GE(deep_asked, std::size_t{300000});
}

// ---------------------------------------------------------------------------------------
// Encoding the response

TEST(EncodeResponse, EchoesApiVersionKindAndUidAndAlwaysAllows) {
  for (const char* api_version : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    const auto doc = parse_json(encode_response(api_version, "uid-123", AdmissionResponse{}));
    ASSERT_TRUE(doc.IsObject());
    EXPECT_EQ(str(doc["apiVersion"]), api_version);
    EXPECT_EQ(str(doc["kind"]), "AdmissionReview");
    const auto* response = member(doc, "response");
    ASSERT_NE(response, nullptr);
    EXPECT_EQ(str((*response)["uid"]), "uid-123");
    ASSERT_TRUE((*response)["allowed"].IsBool());
    EXPECT_TRUE((*response)["allowed"].GetBool());
    EXPECT_EQ(member(doc, "request"), nullptr);
  }
}

TEST(EncodeResponse, OmitsEmptyWarningsAndAnnotations) {
  const auto doc = parse_json(encode_response("admission.k8s.io/v1", "u", AdmissionResponse{}));
  const auto& response = doc["response"];
  EXPECT_EQ(member(response, "warnings"), nullptr);
  EXPECT_EQ(member(response, "auditAnnotations"), nullptr);
  EXPECT_EQ(response.MemberCount(), 2u);  // uid, allowed
}

TEST(EncodeResponse, NeverCarriesAPatchOrAStatus) {
  AdmissionResponse r;
  r.warnings = {"kubegap/zone-spread: x (case y)"};
  r.audit_annotations = {{"zone-spread", "pinned"}};
  const auto doc = parse_json(encode_response("admission.k8s.io/v1", "u", r));
  const auto& response = doc["response"];
  for (const char* forbidden : {"patch", "patchType", "status"}) {
    EXPECT_EQ(member(response, forbidden), nullptr) << forbidden;
  }
  EXPECT_EQ(response.MemberCount(), 4u);  // uid, allowed, warnings, auditAnnotations
}

TEST(EncodeResponse, KeepsWarningOrderAndEveryAnnotation) {
  AdmissionResponse r;
  r.warnings = {"second-alphabetically b", "first a", "third c"};
  r.audit_annotations = {{"zone-spread", "z"}, {"checkpoint-volume", "c"}, {"error", "e"}};
  const auto doc = parse_json(encode_response("admission.k8s.io/v1", "u", r));
  const auto& warnings = doc["response"]["warnings"];
  ASSERT_TRUE(warnings.IsArray());
  ASSERT_EQ(warnings.Size(), 3u);
  EXPECT_EQ(str(warnings[0]), "second-alphabetically b");
  EXPECT_EQ(str(warnings[1]), "first a");
  EXPECT_EQ(str(warnings[2]), "third c");
  const auto& annotations = doc["response"]["auditAnnotations"];
  ASSERT_TRUE(annotations.IsObject());
  EXPECT_EQ(annotations.MemberCount(), 3u);
  EXPECT_EQ(str(annotations["zone-spread"]), "z");
  EXPECT_EQ(str(annotations["checkpoint-volume"]), "c");
  EXPECT_EQ(str(annotations["error"]), "e");
}

// More annotations than the encoder orders on its stack (16): the heap path writes them
// sorted by key as well, each once.
TEST(EncodeResponse, ManyAnnotationsAreWrittenSortedByKey) {
  std::vector<std::string> keys;
  for (int i = 39; i >= 0; --i) keys.push_back("k" + std::string(i < 10 ? "0" : "") + std::to_string(i));
  AdmissionResponse r;
  for (const auto& k : keys) r.audit_annotations.emplace_back(k, "v" + k);
  const std::string body = encode_response("admission.k8s.io/v1", "u", r);
  std::size_t at = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "\"k" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "\"";
    const std::size_t next = body.find(key, at);
    ASSERT_NE(next, std::string::npos) << key << " missing or out of order in " << body;
    at = next;
  }
  EXPECT_EQ(parse_json(body)["response"]["auditAnnotations"].MemberCount(), 40u);
}

TEST(EncodeResponse, EscapesQuotesBackslashesAndControlCharactersEverywhere) {
  const std::string nasty = std::string("q\"b\\s/n\nt\tr\rnul") + '\0' + "\x01\x1f\x7f end";
  const std::string unicode = "\xC3\xBC \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80";
  AdmissionResponse r;
  r.warnings = {nasty, unicode};
  r.audit_annotations = {{nasty, unicode}, {"k", nasty}};
  const std::string body = encode_response("admission.k8s.io/v1", nasty, r);

  // The raw text holds no unescaped control byte (JSON forbids them in strings).
  for (const char c : body) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << "raw control byte in " << body;
  }
  const auto doc = parse_json(body);
  ASSERT_TRUE(doc.IsObject());
  const auto& response = doc["response"];
  const auto& uid = response["uid"];
  EXPECT_EQ(std::string(uid.GetString(), uid.GetStringLength()), nasty);
  const auto& w0 = response["warnings"][0];
  EXPECT_EQ(std::string(w0.GetString(), w0.GetStringLength()), nasty);
  EXPECT_EQ(str(response["warnings"][1]), unicode);
  const auto& annotations = response["auditAnnotations"];
  ASSERT_EQ(annotations.MemberCount(), 2u);
  bool saw_nasty_key = false;
  for (const auto& m : annotations.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    const std::string value(m.value.GetString(), m.value.GetStringLength());
    if (key == nasty) {
      saw_nasty_key = true;
      EXPECT_EQ(value, unicode);
    } else {
      EXPECT_EQ(key, "k");
      EXPECT_EQ(value, nasty);
    }
  }
  EXPECT_TRUE(saw_nasty_key);
}

// writer_encoding: the response as RapidJSON's Writer wrote it before encode_response
// wrote its own text: the bytes the API server got then, which it must still get.
std::string writer_encoding(std::string_view api_version, std::string_view uid, const AdmissionResponse& r) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  const auto text = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("apiVersion");
  text(api_version);
  w.Key("kind");
  w.String("AdmissionReview");
  w.Key("response");
  w.StartObject();
  w.Key("uid");
  text(uid);
  w.Key("allowed");
  w.Bool(true);
  if (!r.warnings.empty()) {
    w.Key("warnings");
    w.StartArray();
    for (const auto& s : r.warnings) text(s);
    w.EndArray();
  }
  if (!r.audit_annotations.empty()) {
    w.Key("auditAnnotations");
    w.StartObject();
    // Sorted by key (they were a std::map's then).
    auto sorted = r.audit_annotations;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [k, v] : sorted) {
      text(k);
      text(v);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

TEST(EncodeResponse, WritesTheSameBytesRapidJsonsWriterDid) {
  // Every byte value, alone and inside text, and pseudo-random strings (a fixed seed)
  // that mix plain runs, escapes and UTF-8.
  std::vector<std::string> samples = {"", "plain", "kubegap/checkpoint-volume: no durable volume (case x)"};
  for (int b = 0; b < 256; ++b) {
    samples.push_back(std::string(1, static_cast<char>(b)));
    samples.push_back("ab" + std::string(1, static_cast<char>(b)) + "cd");
  }
  // Every byte value at offsets around the sixteen-byte blocks the plain-run scan reads.
  for (int b = 0; b < 256; ++b) {
    for (const std::size_t at : {0, 7, 15, 16, 17, 31, 32, 39}) {
      std::string run(40, 'a');
      run[at] = static_cast<char>(b);
      samples.push_back(run);
    }
  }
  std::uint32_t state = 12345;
  const auto next = [&] { return state = state * 1103515245u + 12345u; };
  constexpr std::string_view kAlphabet = "aZ09 /\\\"\n\t\r\b\f\x01\x1f\x7f\xc3\xbc\xe2\x82\xac";
  for (int i = 0; i < 500; ++i) {
    std::string s;
    const std::uint32_t length = next() % 64;
    for (std::uint32_t j = 0; j < length; ++j) s += kAlphabet[(next() >> 8) % kAlphabet.size()];
    samples.push_back(s);
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    AdmissionResponse r;
    r.warnings = {samples[i], samples[(i + 7) % samples.size()]};
    r.audit_annotations = {{samples[i], samples[(i + 3) % samples.size()]}, {"k", samples[i]}};
    EXPECT_EQ(encode_response("admission.k8s.io/v1", samples[i], r),
              writer_encoding("admission.k8s.io/v1", samples[i], r))
        << "sample " << i;
  }
  EXPECT_EQ(encode_response("admission.k8s.io/v1beta1", "u", AdmissionResponse{}),
            writer_encoding("admission.k8s.io/v1beta1", "u", AdmissionResponse{}));
}

TEST(EncodeError, IsAJsonObjectWithTheMessage) {
  const std::string message = "bad \"body\"\n\\ at offset 3";
  const auto doc = parse_json(encode_error(message));
  ASSERT_TRUE(doc.IsObject());
  EXPECT_EQ(doc.MemberCount(), 1u);
  EXPECT_EQ(str(doc["error"]), message);
}

}  // namespace
}  // namespace kgtest
