// The template path grammar (webhook/core/template_path.h): what users write in
// workloadKinds to say where their CRD keeps pod templates, claim templates and volumes.
#include "webhook/core/template_path.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/webhook/test_util.h"

namespace kgtest {
namespace {

using kubegap::JsonPath;
using kubegap::JsonReader;
using kubegap::validate_template_path;
using kubegap::walk_template_path;

// visited: (rendered JSON path, label) of every value `path` reaches in `json`, or the
// reader's error as the only entry.
std::vector<std::pair<std::string, std::string>> visited(const std::string& json, const std::string& path) {
  const rapidjson::Document doc = parse_json(json);
  JsonReader reader;
  std::vector<std::pair<std::string, std::string>> out;
  walk_template_path(reader, doc, JsonPath{nullptr, "obj"}, path,
                     [&](const rapidjson::Value&, const JsonPath& at, const std::string& label) {
                       out.emplace_back(at.render(), label);
                     });
  if (!reader.ok()) return {{"error", reader.error()}};
  return out;
}

using Visits = std::vector<std::pair<std::string, std::string>>;

TEST(TemplatePath, WellFormedPathsAreAccepted) {
  for (const char* path :
       {"", "spec.template", "spec.pytorchReplicaSpecs.*.template", "spec.replicatedJobs[name].template.spec.template",
        "spec.volumes[]", "spec.volumeClaimPolicies[].templates[]", "spec.a_b-c.d9"}) {
    EXPECT_EQ(validate_template_path(path), "") << path;
  }
}

TEST(TemplatePath, MalformedPathsSayWhatIsWrong) {
  EXPECT_NE(validate_template_path("spec..template").find("empty segment"), std::string::npos);
  EXPECT_NE(validate_template_path(".spec").find("empty segment"), std::string::npos);
  EXPECT_NE(validate_template_path("spec.").find("empty segment"), std::string::npos);
  for (const char* path : {"spec.a[b", "spec.[name].t", "spec.w[name]x.t", "spec.w[na me].t", "spec.a b"}) {
    EXPECT_NE(validate_template_path(path).find("is not field, field[key], field[] or *"), std::string::npos) << path;
  }
}

TEST(TemplatePath, EmptyPathIsTheObjectItself) { EXPECT_EQ(visited(R"({"a":1})", ""), (Visits{{"obj", ""}})); }

TEST(TemplatePath, FieldStepsFollowMembers) {
  EXPECT_EQ(visited(R"({"spec":{"template":{}}})", "spec.template"), (Visits{{"obj.spec.template", ""}}));
}

TEST(TemplatePath, StarWalksEveryMemberLabelledByItsName) {
  EXPECT_EQ(visited(R"({"specs":{"Master":{"t":{}},"Worker":{"t":{}},"Gone":null}})", "specs.*.t"),
            (Visits{{"obj.specs.Master.t", "Master"}, {"obj.specs.Worker.t", "Worker"}}));
}

TEST(TemplatePath, KeyedArrayLabelsByTheMemberOrTheIndex) {
  EXPECT_EQ(visited(R"({"jobs":[{"name":"driver","t":{}},{"t":{}}]})", "jobs[name].t"),
            (Visits{{"obj.jobs[0].t", "driver"}, {"obj.jobs[1].t", "1"}}));
}

TEST(TemplatePath, BareArrayWalksEveryElementByIndex) {
  EXPECT_EQ(visited(R"({"p":[{"templates":[{"n":1},{"n":2}]},{"templates":[{"n":3}]}]})", "p[].templates[]"),
            (Visits{{"obj.p[0].templates[0]", "0"}, {"obj.p[0].templates[1]", "1"}, {"obj.p[1].templates[0]", "0"}}));
}

TEST(TemplatePath, AbsentOrNullMembersEndTheBranchQuietly) {
  EXPECT_EQ(visited(R"({"spec":{}})", "spec.template"), Visits{});
  EXPECT_EQ(visited(R"({"spec":null})", "spec.template"), Visits{});
  EXPECT_EQ(visited(R"({})", "spec.jobs[name].t"), Visits{});
}

TEST(TemplatePath, WrongTypesAreReportedWithTheirPath) {
  EXPECT_EQ(visited(R"({"spec":"x"})", "spec.template"), (Visits{{"error", "obj.spec: expected an object"}}));
  EXPECT_EQ(visited(R"({"jobs":{"a":1}})", "jobs[name].t"), (Visits{{"error", "obj.jobs: expected an array"}}));
}

}  // namespace
}  // namespace kgtest
