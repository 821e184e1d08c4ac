// The MCP session, driven with lines and reading what it sends: version negotiation in
// both eras, the catalog, each error, tool calls on their threads (with the same report as
// `check`), the client's roots, and what a cut scan result says it left out.
#include "webhook/mcp/mcp_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <tuple>

#include "policies/policy.h"
#include "webhook/mcp/mcp_tools.h"
#include "webhook/report/offline_check.h"
#include "webhook/report/report_render.h"

namespace {

using kubegap::McpOptions;
using kubegap::McpSession;

constexpr const char* kInitialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"test","version":"1"}}})";

constexpr const char* kGpuJob = R"(apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: pytorch
        command: [torchrun, train.py]
        resources: {limits: {nvidia.com/gpu: 8}}
)";

// Client: a session and the lines it sent, parsed.
class Client {
 public:
  explicit Client(McpOptions options = default_options())
      : session_(std::move(options), [this](const std::string& line) {
          ASSERT_EQ(line.find('\n'), std::string::npos);
          std::lock_guard lock(mutex_);
          lines_.push_back(line);
        }) {}

  static McpOptions default_options() {
    McpOptions options;
    options.policy = kubegap::default_policy();
    options.policy_text = "policy: text";
    options.kubeconfig = "/nonexistent/kubeconfig";
    options.roots_timeout = std::chrono::seconds(2);
    return options;
  }

  void send(const std::string& line) { session_.handle_line(line); }
  // next: the next line sent, waiting for a call's thread (up to 60 s: ASan is slow).
  rapidjson::Document next() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (read_ < lines_.size()) {
          rapidjson::Document d;
          d.Parse(lines_[read_++].c_str());
          EXPECT_FALSE(d.HasParseError());
          return d;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "no answer";
        return rapidjson::Document();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::size_t sent() {
    std::lock_guard lock(mutex_);
    return lines_.size();
  }
  McpSession& session() { return session_; }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
  std::size_t read_ = 0;
  McpSession session_;
};

std::string str(const rapidjson::Value& v) { return v.IsString() ? v.GetString() : "<not a string>"; }

TEST(McpSession, HandshakeAnswersTheAskedVersionOrItsNewest) {
  Client client;
  client.send(kInitialize);
  auto answer = client.next();
  EXPECT_EQ(str(answer["result"]["protocolVersion"]), "2025-06-18");
  EXPECT_EQ(str(answer["result"]["serverInfo"]["name"]), "kubegap-webhook");
  EXPECT_TRUE(answer["result"]["capabilities"].HasMember("tools"));
  EXPECT_TRUE(answer["result"]["capabilities"].HasMember("resources"));
  EXPECT_TRUE(answer["result"]["capabilities"].HasMember("prompts"));

  client.send(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2099-01-01"}})");
  EXPECT_EQ(str(client.next()["result"]["protocolVersion"]), "2025-11-25");
  client.send(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})");
  EXPECT_EQ(client.next()["error"]["code"].GetInt(), -32602);
}

TEST(McpSession, ModernEraDiscoversAndMarksResults) {
  Client client;
  client.send(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{)"
              R"("io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  auto discover = client.next();
  ASSERT_TRUE(discover.HasMember("result"));
  const auto& versions = discover["result"]["supportedVersions"];
  ASSERT_TRUE(versions.IsArray());
  EXPECT_EQ(str(versions[versions.Size() - 1]), "2026-07-28");
  EXPECT_EQ(str(discover["result"]["resultType"]), "complete");
  EXPECT_EQ(str(discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]), "kubegap-webhook");

  client.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{)"
              R"("io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  auto tools = client.next();
  EXPECT_EQ(str(tools["result"]["resultType"]), "complete");
  EXPECT_EQ(tools["result"]["ttlMs"].GetInt(), 0);
  EXPECT_EQ(str(tools["result"]["cacheScope"]), "private");

  client.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{)"
              R"("io.modelcontextprotocol/protocolVersion":"2030-01-01"}}})");
  auto refused = client.next();
  EXPECT_EQ(refused["error"]["code"].GetInt(), -32022);
  EXPECT_TRUE(refused["error"]["data"]["supported"].IsArray());
  EXPECT_EQ(str(refused["error"]["data"]["requested"]), "2030-01-01");
}

TEST(McpSession, ListsFiveReadOnlyToolsWithSchemas) {
  Client client;
  client.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  auto answer = client.next();
  const auto& tools = answer["result"]["tools"];
  ASSERT_EQ(tools.Size(), 5u);
  for (const auto& tool : tools.GetArray()) {
    SCOPED_TRACE(str(tool["name"]));
    EXPECT_EQ(str(tool["inputSchema"]["type"]), "object");
    EXPECT_EQ(str(tool["outputSchema"]["type"]), "object");
    EXPECT_TRUE(tool["annotations"]["readOnlyHint"].GetBool());
    EXPECT_FALSE(tool["annotations"]["destructiveHint"].GetBool());
    EXPECT_TRUE(tool["annotations"]["idempotentHint"].GetBool());
  }
}

TEST(McpSession, ErrorsNameWhatIsWrongAndTheSessionGoesOn) {
  Client client;
  client.send("{oops");
  EXPECT_EQ(client.next()["error"]["code"].GetInt(), -32700);
  client.send(R"({"jsonrpc":"2.0","id":2,"method":"resources/subscribe"})");
  auto unknown = client.next();
  EXPECT_EQ(unknown["error"]["code"].GetInt(), -32601);
  EXPECT_NE(str(unknown["error"]["message"]).find("resources/subscribe"), std::string::npos);
  client.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}})");
  EXPECT_EQ(client.next()["error"]["code"].GetInt(), -32602);
  client.send(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_case","arguments":{"id":"x"}}})");
  auto bad_id = client.next();
  EXPECT_EQ(bad_id["error"]["code"].GetInt(), -32602);
  EXPECT_EQ(str(bad_id["error"]["data"]["field"]), "id");
  client.send(R"({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"kubegap://cases/none"}})");
  auto missing = client.next();
  EXPECT_EQ(missing["error"]["code"].GetInt(), -32002);
  EXPECT_EQ(str(missing["error"]["data"]["uri"]), "kubegap://cases/none");
  client.session().oversized(1 << 20);
  auto big = client.next();
  EXPECT_EQ(big["error"]["code"].GetInt(), -32600);
  EXPECT_TRUE(big["id"].IsNull());
  client.send(R"({"jsonrpc":"2.0","id":6,"method":"ping"})");
  EXPECT_TRUE(client.next()["result"].IsObject());
}

TEST(McpSession, ResourcesAndThePrompt) {
  Client client;
  client.send(R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"kubegap://policy"}})");
  EXPECT_EQ(str(client.next()["result"]["contents"][0]["text"]), "policy: text");
  client.send(
      R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"kubegap://cases/bloom-176b-training-2022"}})");
  auto bloom = client.next();
  EXPECT_EQ(str(bloom["result"]["contents"][0]["mimeType"]), "text/plain");
  EXPECT_NE(str(bloom["result"]["contents"][0]["text"]).find("bloom-176b-training-2022"), std::string::npos);
  client.send(R"({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"audit-training-reliability",)"
              R"("arguments":{"paths":"deploy/"}}})");
  auto prompt = client.next();
  const std::string text = str(prompt["result"]["messages"][0]["content"]["text"]);
  EXPECT_NE(text.find("check_manifests with paths [deploy/]"), std::string::npos) << text;
  EXPECT_NE(text.find("Do not apply"), std::string::npos) << text;
}

// quoted_json: `text` as a JSON string.
std::string quoted_json(const std::string& text) {
  rapidjson::Value v(rapidjson::StringRef(text.data(), text.size()));
  return kubegap::to_json(v);
}

TEST(McpSession, CheckManifestsAnswersWhatCheckReports) {
  Client client;
  client.send(R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"check_manifests",)"
              R"("arguments":{"manifests":)" +
              quoted_json(kGpuJob) + "}}}");
  auto answer = client.next();
  EXPECT_EQ(str(answer["id"]), "c1");
  ASSERT_TRUE(answer.HasMember("result"));
  EXPECT_FALSE(answer["result"]["isError"].GetBool());
  rapidjson::Document expected;
  const std::string job = kGpuJob;
  expected.Parse(
      kubegap::render_json(kubegap::check_paths({"-"}, kubegap::default_policy(), kubegap::CheckSource{&job, {}}))
          .c_str());
  // check --output json, plus what a cut report adds.
  auto& got = answer["result"]["structuredContent"];
  EXPECT_EQ(got["omittedObjects"].GetInt(), 0);
  EXPECT_EQ(got["summary"]["objectsWithFindings"].GetInt(), 1);
  got.RemoveMember("omittedObjects");
  got["summary"].RemoveMember("objectsWithFindings");
  got["summary"].RemoveMember("byCheck");
  EXPECT_TRUE(got == expected) << kubegap::to_json(answer["result"]);
  EXPECT_EQ(str(expected["objects"][0]["file"]), "<stdin>");
  EXPECT_GT(expected["summary"]["findings"].GetInt(), 0);
}

TEST(McpSession, PathsMustLieUnderTheClientsRoots) {
  const auto dir = std::filesystem::temp_directory_path() / ("kubegap-mcp-roots-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "inside");
  std::ofstream(dir / "inside" / "job.yaml") << kGpuJob;
  std::ofstream(dir / "outside.yaml") << kGpuJob;
  Client client;
  client.send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
              R"("capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"t","version":"1"}}})");
  client.next();
  const auto call = [&](const std::string& id, const std::string& path) {
    client.send(R"({"jsonrpc":"2.0","id":)" + id +
                R"(,"method":"tools/call","params":{"name":"check_manifests","arguments":{"paths":[)" +
                quoted_json(path) + "]}}}");
  };
  const auto answer_roots = [&] {
    auto request = client.next();  // the server asks the client for its roots
    ASSERT_EQ(str(request["method"]), "roots/list");
    client.send(R"({"jsonrpc":"2.0","id":)" + kubegap::to_json(request["id"]) +
                R"(,"result":{"roots":[{"uri":"file://)" + (dir / "inside").string() + R"(","name":"work"}]}})");
  };
  call("2", (dir / "inside" / "job.yaml").string());
  answer_roots();
  auto inside = client.next();
  EXPECT_FALSE(inside["result"]["isError"].GetBool()) << kubegap::to_json(inside);
  EXPECT_EQ(inside["result"]["structuredContent"]["summary"]["objects"].GetInt(), 1);
  // The roots are kept until the client says they changed; relative paths are relative to the first.
  call("3", "job.yaml");
  auto relative = client.next();
  EXPECT_FALSE(relative["result"]["isError"].GetBool()) << kubegap::to_json(relative);
  for (const auto& outside : {(dir / "outside.yaml").string(), (dir / "inside" / ".." / "outside.yaml").string()}) {
    call("4", outside);
    auto refused = client.next();
    EXPECT_TRUE(refused["result"]["isError"].GetBool()) << kubegap::to_json(refused);
  }
  // A symbolic link inside a root that leads out of it: the file is not read.
  std::filesystem::create_symlink(dir / "outside.yaml", dir / "inside" / "link.yaml");
  call("5", (dir / "inside").string());
  auto linked = client.next();
  const auto& report = linked["result"]["structuredContent"];
  EXPECT_EQ(report["summary"]["objects"].GetInt(), 1) << kubegap::to_json(linked);
  ASSERT_EQ(report["errors"].Size(), 1u);
  EXPECT_NE(str(report["errors"][0]["message"]).find("outside the directories"), std::string::npos);
  // The roots changed, and the client does not answer any more: an error result, not a hang.
  client.send(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
  call("6", "job.yaml");
  EXPECT_EQ(str(client.next()["method"]), "roots/list");
  auto unanswered = client.next();
  EXPECT_TRUE(unanswered["result"]["isError"].GetBool());
  EXPECT_NE(str(unanswered["result"]["content"][0]["text"]).find("did not answer roots/list"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(McpSession, WithoutRootsTheWorkingDirectoryIsTheRoot) {
  EXPECT_EQ(kubegap::outside_roots({"/etc/passwd"}, {"/work"}), "/etc/passwd");
  EXPECT_EQ(kubegap::outside_roots({"/work/a/../../etc"}, {"/work"}), "/work/a/../../etc");
  EXPECT_EQ(kubegap::outside_roots({"/work/a.yaml", "/work/deploy"}, {"/work"}), "");
  EXPECT_EQ(kubegap::outside_roots({"/work"}, {"/work"}), "");
  EXPECT_EQ(kubegap::outside_roots({"/workshop/a.yaml"}, {"/work"}), "/workshop/a.yaml");
}

TEST(McpSession, AClusterCallWithoutAKubeconfigIsAnErrorResult) {
  Client client;  // --kubeconfig names a file that does not exist
  client.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"scan_cluster","arguments":{}}})");
  auto answer = client.next();
  EXPECT_TRUE(answer["result"]["isError"].GetBool());
  EXPECT_FALSE(answer["result"].HasMember("structuredContent"));
  EXPECT_NE(str(answer["result"]["content"][0]["text"]).find("/nonexistent/kubeconfig"), std::string::npos)
      << kubegap::to_json(answer);
}

TEST(RenderJsonCompact, ACutReportSaysWhatItLeftOutAndCountsEverything) {
  kubegap::CheckReport report;
  const auto finding = [](const char* check, kubegap::Outcome outcome) {
    kubegap::Finding f;
    f.check = check;
    f.outcome = outcome;
    return f;
  };
  for (int i = 0; i < 3; ++i) {
    kubegap::CheckedObject o;
    o.kind = "Job";
    o.name = "j" + std::to_string(i);
    if (i > 0) o.findings.push_back(finding("zone-spread", kubegap::Outcome::kFinding));
    if (i > 1) o.findings.push_back(finding("checkpoint-volume", kubegap::Outcome::kFinding));
    o.findings.push_back(finding("disruption-budget", kubegap::Outcome::kNotEvaluated));
    report.objects.push_back(o);
  }
  rapidjson::Document d;
  d.Parse(kubegap::render_json_compact(report, 2).c_str());
  EXPECT_EQ(d["objects"].Size(), 2u);
  EXPECT_EQ(d["omittedObjects"].GetInt(), 1);
  EXPECT_EQ(d["summary"]["objects"].GetInt(), 3);
  EXPECT_EQ(d["summary"]["findings"].GetInt(), 3);
  EXPECT_EQ(d["summary"]["objectsWithFindings"].GetInt(), 2);
  EXPECT_EQ(d["summary"]["byCheck"]["zone-spread"].GetInt(), 2);
  EXPECT_EQ(d["summary"]["byCheck"]["checkpoint-volume"].GetInt(), 1);
  EXPECT_FALSE(d["summary"]["byCheck"].HasMember("disruption-budget"));
}

}  // namespace
