// The pure half of list+watch (webhook/kube/watch_stream.h): LineSplitter cutting a watch
// response into events whatever the chunking, and ResourceStore keeping PDBs and Nodes
// current from paginated lists and ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events. Fake
// streams only: no sockets. The recorded-looking streams are tests/fixtures/kube/*.jsonl.
#include "webhook/kube/watch_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/label_selector.h"
#include "tests/webhook/test_util.h"

namespace kgtest {
namespace {

using kubegap::ClusterSnapshot;
using kubegap::decode_budget_object;
using kubegap::decode_node_object;
using kubegap::DisruptionBudget;
using kubegap::LabelSelector;
using kubegap::LineSplitter;
using kubegap::NodeInfo;
using kubegap::ResourceStore;
using kubegap::selects;
using kubegap::StringMap;
using kubegap::WatchResult;

using BudgetStore = ResourceStore<DisruptionBudget>;
using NodeStore = ResourceStore<NodeInfo>;

BudgetStore budget_store() { return BudgetStore(decode_budget_object, kubegap::budget_key); }
NodeStore node_store() { return NodeStore(decode_node_object, kubegap::node_key); }

// ---------------------------------------------------------------------------------------
// Canonical renderings, so whole stores compare as strings and failures print readably.

std::string describe(const std::optional<LabelSelector>& selector) {
  if (!selector) return "null";
  std::string out = "{";
  for (const auto& [key, value] : selector->match_labels) out += key + "=" + value + ",";
  out += "|";
  for (const auto& r : selector->match_expressions) {
    out += r.key + " " + r.op + " [";
    for (const auto& v : r.values) out += v + ",";
    out += "];";
  }
  return out + "}";
}

std::string describe(const std::vector<DisruptionBudget>& budgets) {
  std::vector<std::string> lines;
  for (const auto& b : budgets) lines.push_back(b.namespace_name + "/" + b.name + " " + describe(b.selector));
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

std::string describe(const std::vector<NodeInfo>& nodes) {
  std::vector<std::string> lines;
  for (const auto& n : nodes) {
    std::string line = n.name + " {";
    for (const auto& [key, value] : n.labels) line += key + "=" + value + ",";
    lines.push_back(line + "}");
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

template <typename T>
std::string describe(const ResourceStore<T>& store) {
  return describe(store.values()) + "@" + store.resource_version();
}

char letter(WatchResult result) {
  switch (result) {
    case WatchResult::kChanged:
      return 'C';
    case WatchResult::kUnchanged:
      return 'U';
    case WatchResult::kBookmark:
      return 'B';
    case WatchResult::kRelist:
      return 'R';
    case WatchResult::kError:
      return 'E';
  }
  return '?';
}

const DisruptionBudget* find_budget(const std::vector<DisruptionBudget>& budgets, const std::string& ns,
                                    const std::string& name) {
  for (const auto& b : budgets) {
    if (b.namespace_name == ns && b.name == name) return &b;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// Builders for the JSON the API server sends.

std::string pdb_json(const std::string& ns, const std::string& name, const std::string& rv,
                     const std::string& selector_json) {
  std::string meta = R"("name":")" + name + R"(","resourceVersion":")" + rv + "\"";
  if (!ns.empty()) meta += R"(,"namespace":")" + ns + "\"";
  return R"({"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{)" + meta + R"(},"spec":{"selector":)" +
         selector_json + R"(,"maxUnavailable":0}})";
}

std::string node_json(const std::string& name, const std::string& rv, const std::string& labels_json) {
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","resourceVersion":")" + rv +
         R"(","labels":)" + labels_json + R"(},"spec":{},"status":{}})";
}

std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

std::string bookmark(const std::string& rv) {
  return event("BOOKMARK", R"({"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"resourceVersion":")" +
                               rv + R"(","creationTimestamp":null},"spec":{},"status":{}})");
}

std::string status_error(int code, const std::string& reason, const std::string& message) {
  return event("ERROR", R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" + message +
                            R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}");
}

std::string pdb_list_page(const std::string& rv, const std::string& continue_token,
                          const std::vector<std::string>& items) {
  std::string meta = R"("resourceVersion":")" + rv + "\"";
  if (!continue_token.empty()) meta += R"(,"continue":")" + continue_token + R"(","remainingItemCount":2)";
  std::string list;
  for (const auto& item : items) list += (list.empty() ? "" : ",") + item;
  return R"({"kind":"PodDisruptionBudgetList","apiVersion":"policy/v1","metadata":{)" + meta + R"(},"items":[)" + list +
         "]}";
}

const std::string kJobSelector = R"({"matchLabels":{"training.kubeflow.org/job-name":"llm-pretrain"}})";

// apply_ok: applies an event that must succeed, failing the test with its error otherwise.
template <typename T>
WatchResult apply_ok(ResourceStore<T>& store, const std::string& line) {
  std::string error;
  const WatchResult result = store.apply_event(line, &error);
  EXPECT_NE(result, WatchResult::kError) << error << "\n" << line;
  return result;
}

// list_once: a one-page list that must succeed.
template <typename T>
void list_once(ResourceStore<T>& store, const std::string& page) {
  store.start_list();
  std::string continue_token = "unset";
  ASSERT_EQ(store.add_list_page(page, continue_token), "");
  ASSERT_EQ(continue_token, "");
  store.finish_list();
}

// =======================================================================================
// LineSplitter

std::vector<std::string> split(LineSplitter& splitter, const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  for (const auto& chunk : chunks) {
    EXPECT_TRUE(splitter.feed(chunk, [&](std::string_view line) { lines.emplace_back(line); }));
  }
  return lines;
}

struct SplitCase {
  const char* name;
  std::vector<std::string> chunks;
  std::vector<std::string> lines;
  std::size_t pending_after;
};

TEST(LineSplitter, HandsOutWholeLinesWhateverTheChunking) {
  const std::string a = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})";
  const std::string b = R"({"type":"DELETED","object":{"metadata":{"name":"b"}}})";
  const std::string c = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})";
  const std::vector<SplitCase> cases = {
      {"one event per chunk", {a + "\n", b + "\n", c + "\n"}, {a, b, c}, 0},
      {"several events in one chunk", {a + "\n" + b + "\n" + c + "\n"}, {a, b, c}, 0},
      {"split mid-JSON across two chunks", {a.substr(0, 17), a.substr(17) + "\n"}, {a}, 0},
      {"split mid-JSON across three chunks", {a.substr(0, 5), a.substr(5, 20), a.substr(25) + "\n"}, {a}, 0},
      {"split inside a string value, next event in the same chunk",
       {a.substr(0, 40), a.substr(40) + "\n" + b.substr(0, 3), b.substr(3) + "\n"},
       {a, b},
       0},
      {"chunk ending exactly at the newline", {a + "\n", b + "\n"}, {a, b}, 0},
      {"newline alone in the next chunk", {a, "\n", b, "\n"}, {a, b}, 0},
      {"empty lines are skipped", {"\n\n" + a + "\n\n", "\n" + b + "\n\n\n"}, {a, b}, 0},
      {"empty line right after a split line", {a.substr(0, 9), a.substr(9) + "\n\n" + b + "\n"}, {a, b}, 0},
      {"an unfinished line is kept, not handed out", {a + "\n" + b.substr(0, 12)}, {a}, 12},
      {"nothing but newlines", {"\n", "\n\n"}, {}, 0},
      {"an empty chunk changes nothing", {a.substr(0, 4), "", a.substr(4) + "\n"}, {a}, 0},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    LineSplitter splitter;
    EXPECT_EQ(split(splitter, tc.chunks), tc.lines);
    EXPECT_EQ(splitter.pending(), tc.pending_after);
  }
}

TEST(LineSplitter, OneByteChunksYieldTheSameLinesAsOneChunk) {
  const auto stream = read_text(fixture_path("kube/pdb-watch.jsonl"));
  ASSERT_TRUE(stream.has_value());
  LineSplitter whole;
  const auto expected = split(whole, {*stream});
  ASSERT_EQ(expected.size(), 7u);

  LineSplitter bytewise;
  std::vector<std::string> chunks;
  for (const char ch : *stream) chunks.emplace_back(1, ch);
  EXPECT_EQ(split(bytewise, chunks), expected);
  EXPECT_EQ(bytewise.pending(), 0u);
}

TEST(LineSplitter, ChunkEndingAtNewlineLeavesNothingPending) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  ASSERT_TRUE(splitter.feed("{\"a\":1}\n", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(splitter.pending(), 0u);
  ASSERT_TRUE(splitter.feed("{\"b\":2}\n", [&](std::string_view l) { lines.emplace_back(l); }));
  // Nothing from the first line leaks into the second.
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

TEST(LineSplitter, ResetDropsAPartialLine) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  ASSERT_TRUE(splitter.feed("{\"half\":", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(splitter.pending(), 8u);
  splitter.reset();
  EXPECT_EQ(splitter.pending(), 0u);
  ASSERT_TRUE(splitter.feed("{\"b\":2}\n", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"b\":2}"}));
}

TEST(LineSplitter, LineOfExactlyMaxLineIsAccepted) {
  LineSplitter splitter;
  std::size_t delivered = 0;
  const std::string big(LineSplitter::kMaxLine, 'x');
  ASSERT_TRUE(splitter.feed(big, [&](std::string_view l) { delivered = l.size(); }));
  EXPECT_EQ(splitter.pending(), LineSplitter::kMaxLine);
  ASSERT_TRUE(splitter.feed("\n", [&](std::string_view l) { delivered = l.size(); }));
  EXPECT_EQ(delivered, LineSplitter::kMaxLine);
}

TEST(LineSplitter, LineGrowingPastMaxLineAcrossChunksMakesFeedFail) {
  LineSplitter splitter;
  bool called = false;
  const std::string chunk(1024 * 1024, 'x');
  bool ok = true;
  std::size_t fed = 0;
  while (ok && fed <= LineSplitter::kMaxLine) {
    ok = splitter.feed(chunk, [&](std::string_view) { called = true; });
    fed += chunk.size();
  }
  EXPECT_FALSE(ok);
  EXPECT_GT(fed, LineSplitter::kMaxLine);
  EXPECT_FALSE(called);
  EXPECT_LE(splitter.pending(), LineSplitter::kMaxLine);
}

TEST(LineSplitter, LinePastMaxLineFailsEvenWhenItsNewlineIsInTheSameChunk) {
  // The limit must not depend on where the stream was cut: a too-long line whose
  // newline arrives with its last bytes is as unusable as one still growing.
  {
    LineSplitter splitter;
    bool called = false;
    const std::string line = std::string(LineSplitter::kMaxLine + 1, 'x') + "\n";
    EXPECT_FALSE(splitter.feed(line, [&](std::string_view) { called = true; }));
    EXPECT_FALSE(called);
  }
  {
    LineSplitter splitter;
    bool called = false;
    ASSERT_TRUE(splitter.feed(std::string(LineSplitter::kMaxLine - 4, 'x'), [&](std::string_view) { called = true; }));
    EXPECT_FALSE(splitter.feed("0123456789\n", [&](std::string_view) { called = true; }));
    EXPECT_FALSE(called);
  }
}

// =======================================================================================
// ResourceStore: lists

TEST(ResourceStoreList, PaginatedListReplacesTheStoreAndTakesTheLastPagesResourceVersion) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("100", "", {pdb_json("old", "stale", "90", kJobSelector)}));
  apply_ok(store, event("ADDED", pdb_json("old", "added-by-watch", "150", kJobSelector)));
  ASSERT_EQ(store.size(), 2u);
  ASSERT_EQ(store.resource_version(), "150");

  // Real pages share one resourceVersion; different ones here show which page counts.
  const std::string token1 = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTAwLCJzdGFydCI6ImEvcGRiLTEifQ==";
  const std::string token2 = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTAwLCJzdGFydCI6ImIvcGRiLTIifQ+/";
  store.start_list();
  std::string continue_token;
  ASSERT_EQ(store.add_list_page(
                pdb_list_page("500", token1,
                              {pdb_json("a", "pdb-0", "401", kJobSelector), pdb_json("a", "pdb-1", "402", "null")}),
                continue_token),
            "");
  EXPECT_EQ(continue_token, token1);
  // Mid-list, readers still see the old objects.
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.resource_version(), "150");

  ASSERT_EQ(store.add_list_page(pdb_list_page("501", token2, {pdb_json("b", "pdb-2", "403", "{}")}), continue_token),
            "");
  EXPECT_EQ(continue_token, token2);
  ASSERT_EQ(
      store.add_list_page(pdb_list_page("502", "", {pdb_json("c", "pdb-4", "404", kJobSelector)}), continue_token), "");
  EXPECT_EQ(continue_token, "");
  EXPECT_NE(find_budget(store.values(), "old", "stale"), nullptr) << "replaced before finish_list";
  store.finish_list();

  EXPECT_EQ(store.resource_version(), "502");
  const auto values = store.values();
  EXPECT_EQ(values.size(), 4u);
  EXPECT_EQ(find_budget(values, "old", "stale"), nullptr);
  EXPECT_EQ(find_budget(values, "old", "added-by-watch"), nullptr);
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"a", "pdb-0"}, {"a", "pdb-1"}, {"b", "pdb-2"}, {"c", "pdb-4"}}) {
    EXPECT_NE(find_budget(values, ns, name), nullptr) << ns << "/" << name;
  }
  EXPECT_FALSE(find_budget(values, "a", "pdb-1")->selector.has_value());
  ASSERT_TRUE(find_budget(values, "b", "pdb-2")->selector.has_value());
}

TEST(ResourceStoreList, PaginatedNodeListReplacesTheStore) {
  NodeStore store = node_store();
  list_once(store, R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[)" +
                       node_json("gone", "9", "{}") + "]}");
  store.start_list();
  std::string continue_token;
  ASSERT_EQ(
      store.add_list_page(
          R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"20","continue":"c1"},"items":[)" +
              node_json("n1", "11", R"({"topology.kubernetes.io/zone":"z1"})") + "]}",
          continue_token),
      "");
  EXPECT_EQ(continue_token, "c1");
  ASSERT_EQ(
      store.add_list_page(
          R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"21","continue":"c2"},"items":[)" +
              node_json("n2", "12", R"({"topology.kubernetes.io/zone":"z2"})") + "]}",
          continue_token),
      "");
  EXPECT_EQ(continue_token, "c2");
  ASSERT_EQ(
      store.add_list_page(R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"22"},"items":[)" +
                              node_json("n3", "13", "{}") + "]}",
                          continue_token),
      "");
  EXPECT_EQ(continue_token, "");
  store.finish_list();
  EXPECT_EQ(describe(store),
            "n1 {topology.kubernetes.io/zone=z1,}\n"
            "n2 {topology.kubernetes.io/zone=z2,}\n"
            "n3 {}\n"
            "@22");
}

TEST(ResourceStoreList, EmptyListEmptiesTheStore) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("5", "", {pdb_json("a", "x", "4", kJobSelector)}));
  ASSERT_EQ(store.size(), 1u);
  list_once(store, pdb_list_page("9", "", {}));
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.resource_version(), "9");
  // "items": null (or absent) is an empty list too.
  list_once(store, pdb_list_page("10", "", {pdb_json("a", "x", "4", kJobSelector)}));
  list_once(store, R"({"kind":"PodDisruptionBudgetList","metadata":{"resourceVersion":"11"},"items":null})");
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.resource_version(), "11");
}

TEST(ResourceStoreList, ListFailingOnALaterPageDoesNotReplaceTheStore) {
  struct BadPage {
    const char* name;
    std::string body;
    const char* error;
  };
  const std::vector<BadPage> bad_pages = {
      {"truncated JSON", R"({"kind":"PodDisruptionBudgetList","metadata":{"resourceVersion":"31"},"items":[{"meta)",
       "invalid JSON"},
      {"not an object", "[]", "expected a JSON object"},
      {"no resourceVersion", R"({"kind":"PodDisruptionBudgetList","metadata":{},"items":[]})", "resourceVersion"},
      {"items not an array", R"({"metadata":{"resourceVersion":"31"},"items":{"a":1}})", "items"},
      {"item with mistyped labels",
       pdb_list_page("31", "",
                     {pdb_json("a", "ok", "1", kJobSelector),
                      R"({"metadata":{"name":"bad","namespace":"a","labels":["x"]},"spec":{}})"}),
       "labels"},
      {"selector of the wrong type", pdb_list_page("31", "", {pdb_json("a", "bad", "1", "\"app=x\"")}), "selector"},
  };
  for (const auto& bad : bad_pages) {
    SCOPED_TRACE(bad.name);
    BudgetStore store = budget_store();
    list_once(store, pdb_list_page("10", "", {pdb_json("live", "kept", "9", kJobSelector)}));
    apply_ok(store, event("ADDED", pdb_json("live", "watched", "12", "{}")));
    const std::string before = describe(store);

    store.start_list();
    std::string continue_token;
    ASSERT_EQ(store.add_list_page(pdb_list_page("30", "more", {pdb_json("new", "leftover", "29", kJobSelector)}),
                                  continue_token),
              "");
    const std::string error = store.add_list_page(bad.body, continue_token);
    EXPECT_NE(error.find(bad.error), std::string::npos) << error;
    // The caller does not call finish_list after an error: the store is untouched.
    EXPECT_EQ(describe(store), before);

    // The next list starts afresh: nothing from the failed attempt leaks into it.
    store.start_list();
    ASSERT_EQ(
        store.add_list_page(pdb_list_page("40", "", {pdb_json("new", "fresh", "39", kJobSelector)}), continue_token),
        "");
    store.finish_list();
    EXPECT_EQ(describe(store), "new/fresh " +
                                   describe(std::optional<LabelSelector>(
                                       LabelSelector{{{"training.kubeflow.org/job-name", "llm-pretrain"}}, {}})) +
                                   "\n@40");
  }
}

// =======================================================================================
// ResourceStore: watch events

TEST(ResourceStoreEvents, AddedModifiedDeletedChangeTheStoreAndResourceVersion) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("100", "", {}));

  EXPECT_EQ(apply_ok(store, event("ADDED", pdb_json("ml", "a", "101", kJobSelector))), WatchResult::kChanged);
  EXPECT_EQ(store.resource_version(), "101");
  EXPECT_EQ(apply_ok(store, event("ADDED", pdb_json("ml", "b", "102", "{}"))), WatchResult::kChanged);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.resource_version(), "102");

  // MODIFIED: a selector change is visible in values().
  EXPECT_EQ(
      apply_ok(store, event("MODIFIED",
                            pdb_json("ml", "a", "103",
                                     R"({"matchExpressions":[{"key":"tier","operator":"In","values":["gpu"]}]})"))),
      WatchResult::kChanged);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.resource_version(), "103");
  const auto values = store.values();
  const DisruptionBudget* a = find_budget(values, "ml", "a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->selector.has_value());
  EXPECT_TRUE(a->selector->match_labels.empty());
  ASSERT_EQ(a->selector->match_expressions.size(), 1u);
  EXPECT_EQ(a->selector->match_expressions[0].key, "tier");
  EXPECT_EQ(a->selector->match_expressions[0].op, "In");
  EXPECT_EQ(a->selector->match_expressions[0].values, std::vector<std::string>{"gpu"});

  EXPECT_EQ(apply_ok(store, event("DELETED", pdb_json("ml", "b", "104", "{}"))), WatchResult::kChanged);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(find_budget(store.values(), "ml", "b"), nullptr);
  EXPECT_EQ(store.resource_version(), "104");
}

TEST(ResourceStoreEvents, SameNameInTwoNamespacesAreTwoBudgets) {
  BudgetStore store = budget_store();
  apply_ok(store, event("ADDED", pdb_json("team-a", "workers", "1", kJobSelector)));
  apply_ok(store, event("ADDED", pdb_json("team-b", "workers", "2", "{}")));
  EXPECT_EQ(store.size(), 2u);
  apply_ok(store, event("DELETED", pdb_json("team-a", "workers", "3", kJobSelector)));
  EXPECT_EQ(describe(store), "team-b/workers {|}\n@3");
}

TEST(ResourceStoreEvents, NodeEventsTrackLabels) {
  NodeStore store = node_store();
  list_once(store, R"({"kind":"NodeList","metadata":{"resourceVersion":"50"},"items":[)" +
                       node_json("gpu-0", "40", R"({"topology.kubernetes.io/zone":"a"})") + "]}");
  EXPECT_EQ(apply_ok(store, event("ADDED", node_json("gpu-1", "51", R"({"topology.kubernetes.io/zone":"a"})"))),
            WatchResult::kChanged);
  EXPECT_EQ(apply_ok(store, event("MODIFIED",
                                  node_json("gpu-0", "52", R"({"topology.kubernetes.io/zone":"b","pool":"gpu"})"))),
            WatchResult::kChanged);
  EXPECT_EQ(describe(store),
            "gpu-0 {pool=gpu,topology.kubernetes.io/zone=b,}\ngpu-1 {topology.kubernetes.io/zone=a,}\n@52");
  // A node whose labels are all removed is kept, with no labels.
  EXPECT_EQ(apply_ok(store, event("MODIFIED", node_json("gpu-1", "53", "null"))), WatchResult::kChanged);
  EXPECT_EQ(apply_ok(store, event("DELETED", node_json("gpu-0", "54", "{}"))), WatchResult::kChanged);
  EXPECT_EQ(describe(store), "gpu-1 {}\n@54");
}

// A MODIFIED that changes nothing the checks read (a Node's status heartbeat, its
// resourceVersion, a PDB's status) is kUnchanged: no new snapshot; the version still moves.
TEST(ResourceStoreEvents, ModifiedWithSameLabelsOrSelectorIsUnchanged) {
  NodeStore nodes = node_store();
  list_once(nodes, R"({"kind":"NodeList","metadata":{"resourceVersion":"50"},"items":[)" +
                       node_json("gpu-0", "40", R"({"topology.kubernetes.io/zone":"a","pool":"gpu"})") + "]}");
  EXPECT_EQ(apply_ok(nodes, event("MODIFIED",
                                  node_json("gpu-0", "61", R"({"pool":"gpu","topology.kubernetes.io/zone":"a"})"))),
            WatchResult::kUnchanged);
  EXPECT_EQ(nodes.resource_version(), "61");
  EXPECT_EQ(
      apply_ok(nodes, event("ADDED", node_json("gpu-0", "62", R"({"pool":"gpu","topology.kubernetes.io/zone":"a"})"))),
      WatchResult::kUnchanged);
  EXPECT_EQ(apply_ok(nodes, event("MODIFIED",
                                  node_json("gpu-0", "63", R"({"pool":"cpu","topology.kubernetes.io/zone":"a"})"))),
            WatchResult::kChanged);
  EXPECT_EQ(describe(nodes), "gpu-0 {pool=cpu,topology.kubernetes.io/zone=a,}\n@63");

  BudgetStore budgets = budget_store();
  list_once(budgets, pdb_list_page("200", "", {pdb_json("a", "x", "150", kJobSelector)}));
  EXPECT_EQ(apply_ok(budgets, event("MODIFIED", pdb_json("a", "x", "201", kJobSelector))), WatchResult::kUnchanged);
  EXPECT_EQ(apply_ok(budgets, event("MODIFIED", pdb_json("a", "x", "202", "{}"))), WatchResult::kChanged);
}

TEST(ResourceStoreEvents, BookmarkOnlyMovesTheResourceVersion) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("200", "", {pdb_json("a", "x", "150", kJobSelector)}));
  const std::string before = describe(store.values());

  EXPECT_EQ(apply_ok(store, bookmark("260")), WatchResult::kBookmark);
  EXPECT_EQ(store.resource_version(), "260");
  EXPECT_EQ(describe(store.values()), before);

  // A bookmark without a resourceVersion leaves it where it was.
  EXPECT_EQ(apply_ok(store, R"({"type":"BOOKMARK","object":{"kind":"PodDisruptionBudget","metadata":{}}})"),
            WatchResult::kBookmark);
  EXPECT_EQ(store.resource_version(), "260");
  EXPECT_EQ(describe(store.values()), before);
}

TEST(ResourceStoreEvents, Error410GoneAsksForARelistAndChangesNothing) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("300", "", {pdb_json("a", "x", "150", kJobSelector)}));
  const std::string before = describe(store);
  EXPECT_EQ(store.apply_event(status_error(410, "Expired", "too old resource version: 300 (412)")),
            WatchResult::kRelist);
  EXPECT_EQ(store.apply_event(status_error(410, "Gone", "The resourceVersion for the provided watch is too old.")),
            WatchResult::kRelist);
  EXPECT_EQ(describe(store), before);
}

TEST(ResourceStoreEvents, ErrorWithAnotherCodeIsAnErrorCarryingItsMessage) {
  struct Case {
    std::string line;
    std::string message;
  };
  const std::vector<Case> cases = {
      {status_error(500, "InternalError", "etcdserver: request timed out"), "etcdserver: request timed out"},
      {status_error(403, "Forbidden", "poddisruptionbudgets.policy is forbidden: User cannot watch resource"),
       "poddisruptionbudgets.policy is forbidden: User cannot watch resource"},
      {status_error(429, "TooManyRequests", "storage is (re)initializing"), "storage is (re)initializing"},
      {R"({"type":"ERROR","object":{"kind":"Status","code":500}})", "watch ERROR event"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.line);
    BudgetStore store = budget_store();
    list_once(store, pdb_list_page("300", "", {pdb_json("a", "x", "150", kJobSelector)}));
    const std::string before = describe(store);
    std::string error;
    EXPECT_EQ(store.apply_event(tc.line, &error), WatchResult::kError);
    EXPECT_EQ(error, tc.message);
    EXPECT_EQ(describe(store), before);
  }
}

TEST(ResourceStoreEvents, MalformedEventsAreErrorsAndLeaveTheStoreUnchanged) {
  struct Case {
    const char* name;
    std::string line;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"truncated JSON", R"({"type":"ADDED","object":{"metadata":{"name":"y")", "invalid JSON"},
      {"not JSON at all", "HTTP/1.1 500 Internal Server Error", "invalid JSON"},
      {"invalid UTF-8", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xff\"}}}", "invalid JSON"},
      {"an array, not an object", R"([{"type":"ADDED"}])", "expected a JSON object"},
      {"missing type", R"({"object":)" + pdb_json("a", "y", "999", "{}") + "}", "without type"},
      {"type not a string", R"({"type":1,"object":)" + pdb_json("a", "y", "999", "{}") + "}", "without type"},
      {"missing object", R"({"type":"ADDED"})", "without type or object"},
      {"object not an object", R"({"type":"ADDED","object":"a/y"})", "without type or object"},
      {"unknown type", event("SYNC", pdb_json("a", "y", "999", "{}")), "unknown watch event type SYNC"},
      {"lower-case type", event("added", pdb_json("a", "y", "999", "{}")), "unknown watch event type added"},
      {"mistyped labels",
       event("ADDED", R"({"metadata":{"name":"y","namespace":"a","resourceVersion":"999","labels":"x"},"spec":{}})"),
       "labels"},
      {"mistyped matchExpressions", event("MODIFIED", pdb_json("a", "x", "999", R"({"matchExpressions":{"key":"k"}})")),
       "matchExpressions"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    BudgetStore store = budget_store();
    list_once(store, pdb_list_page("300", "", {pdb_json("a", "x", "150", kJobSelector)}));
    const std::string before = describe(store);
    std::string error;
    EXPECT_EQ(store.apply_event(tc.line, &error), WatchResult::kError);
    EXPECT_NE(error.find(tc.error), std::string::npos) << error;
    EXPECT_EQ(describe(store), before) << "store or resourceVersion changed";
  }
}

TEST(ResourceStoreEvents, ErrorOutParameterIsOptional) {
  BudgetStore store = budget_store();
  EXPECT_EQ(store.apply_event("{nope"), WatchResult::kError);
  EXPECT_EQ(store.apply_event(status_error(500, "InternalError", "boom")), WatchResult::kError);
  EXPECT_EQ(store.size(), 0u);
}

TEST(ResourceStoreEvents, DeletedOfAnUnknownKeyIsHarmless) {
  BudgetStore store = budget_store();
  list_once(store, pdb_list_page("300", "", {pdb_json("a", "x", "150", kJobSelector)}));
  const std::string values_before = describe(store.values());
  EXPECT_EQ(apply_ok(store, event("DELETED", pdb_json("a", "never-seen", "301", "{}"))), WatchResult::kChanged);
  EXPECT_EQ(describe(store.values()), values_before);
  EXPECT_EQ(store.resource_version(), "301");
}

TEST(ResourceStoreEvents, BudgetWithoutNamespaceIsInDefault) {
  BudgetStore store = budget_store();
  apply_ok(store, event("ADDED", pdb_json("", "no-ns", "1", kJobSelector)));
  const auto values = store.values();
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].namespace_name, "default");
  EXPECT_EQ(values[0].name, "no-ns");
  // The same object with an explicit "default" namespace is the same key.
  apply_ok(store, event("MODIFIED", pdb_json("default", "no-ns", "2", "{}")));
  EXPECT_EQ(describe(store), "default/no-ns {|}\n@2");
  apply_ok(store, event("DELETED", pdb_json("", "no-ns", "3", "{}")));
  EXPECT_EQ(store.size(), 0u);
}

TEST(ResourceStoreEvents, NullAndEmptySelectorsArePreservedThroughEvents) {
  BudgetStore store = budget_store();
  const StringMap any_pod = {{"app", "whatever"}};
  auto selector = [&]() {
    const auto values = store.values();
    EXPECT_EQ(values.size(), 1u);
    return values.empty() ? std::optional<LabelSelector>() : values[0].selector;
  };

  apply_ok(store, event("ADDED", pdb_json("ns", "p", "1", "null")));
  EXPECT_FALSE(selector().has_value()) << "null selector became non-null";
  EXPECT_FALSE(selects(selector(), any_pod)) << "a null selector selects nothing";

  apply_ok(store, event("MODIFIED", pdb_json("ns", "p", "2", "{}")));
  ASSERT_TRUE(selector().has_value()) << "empty selector became null";
  EXPECT_TRUE(selector()->match_labels.empty());
  EXPECT_TRUE(selector()->match_expressions.empty());
  EXPECT_TRUE(selects(selector(), any_pod)) << "an empty selector selects everything";
  EXPECT_TRUE(selects(selector(), {}));

  apply_ok(store, event("MODIFIED", pdb_json("ns", "p", "3", R"({"matchLabels":{},"matchExpressions":[]})")));
  ASSERT_TRUE(selector().has_value()) << "explicitly empty lists still make an empty selector";
  EXPECT_TRUE(selects(selector(), any_pod));

  apply_ok(store,
           event("MODIFIED",
                 R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"4"},"spec":{"maxUnavailable":1}})"));
  EXPECT_FALSE(selector().has_value()) << "an absent selector is null";

  apply_ok(store, event("MODIFIED", R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"5"}})"));
  EXPECT_FALSE(selector().has_value()) << "an absent spec means a null selector";
  EXPECT_FALSE(selects(selector(), any_pod));
}

TEST(ResourceStoreEvents, NullSelectorSurvivesAList) {
  BudgetStore store = budget_store();
  list_once(store,
            pdb_list_page("7", "", {pdb_json("ns", "null-sel", "5", "null"), pdb_json("ns", "empty-sel", "6", "{}")}));
  const auto values = store.values();
  ASSERT_NE(find_budget(values, "ns", "null-sel"), nullptr);
  ASSERT_NE(find_budget(values, "ns", "empty-sel"), nullptr);
  EXPECT_FALSE(find_budget(values, "ns", "null-sel")->selector.has_value());
  EXPECT_TRUE(find_budget(values, "ns", "empty-sel")->selector.has_value());
}

// =======================================================================================
// End to end of the pure half: a recorded-looking watch stream, cut everywhere.

template <typename T>
struct Replay {
  std::string state;    // describe(store)
  std::string results;  // one letter per event: C changed, B bookmark, R relist, E error
  std::string errors;
  bool relist = false;
  bool fits = true;

  bool operator==(const Replay&) const = default;
};

// replay: feeds `chunks` through a LineSplitter into a copy of `initial`, the way
// ClusterWatcher::watch does: once a relist is asked for, later lines are ignored.
template <typename T>
Replay<T> replay(const ResourceStore<T>& initial, const std::vector<std::string_view>& chunks) {
  ResourceStore<T> store = initial;
  LineSplitter splitter;
  Replay<T> out;
  for (const auto chunk : chunks) {
    out.fits = out.fits && splitter.feed(chunk, [&](std::string_view line) {
      if (out.relist) return;
      std::string error;
      const WatchResult result = store.apply_event(line, &error);
      out.results += letter(result);
      if (result == WatchResult::kRelist) out.relist = true;
      if (result == WatchResult::kError) out.errors += error + "\n";
    });
  }
  out.state = describe(store);
  if (splitter.pending() != 0) out.errors += "pending bytes at the end\n";
  return out;
}

template <typename T>
void expect_same_for_every_cut(const ResourceStore<T>& initial, const std::string& stream, const Replay<T>& expected) {
  // Every single cut point: two chunks.
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    const std::string_view s(stream);
    const auto got = replay(initial, {s.substr(0, cut), s.substr(cut)});
    ASSERT_EQ(got, expected) << "cut at byte " << cut << " of " << stream.size() << "\n"
                             << got.state << " " << got.results << " " << got.errors;
  }
  // One byte at a time.
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < stream.size(); ++i) bytes.push_back(std::string_view(stream).substr(i, 1));
  EXPECT_EQ(replay(initial, bytes), expected) << "1-byte chunks";
  // Many random multi-cut chunkings (fixed seed: reproducible).
  std::mt19937 random(20240513);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string_view> chunks;
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t len = std::uniform_int_distribution<std::size_t>(1, 700)(random);
      chunks.push_back(std::string_view(stream).substr(at, len));
      at += len;
    }
    ASSERT_EQ(replay(initial, chunks), expected) << "random chunking round " << round;
  }
}

TEST(WatchStreamReplay, PdbStreamGivesTheSameStoreAndRelistForEverySplit) {
  const auto stream = read_text(fixture_path("kube/pdb-watch.jsonl"));
  ASSERT_TRUE(stream.has_value());
  BudgetStore initial = budget_store();
  list_once(initial, pdb_list_page("48000", "", {pdb_json("ml-research", "stale-from-list", "47000", "{}")}));

  const auto whole = replay(initial, {std::string_view(*stream)});
  // The recorded stream: ADDED x3, BOOKMARK, MODIFIED, DELETED, ERROR 410.
  EXPECT_EQ(whole.results, "CCCBCCR");
  EXPECT_TRUE(whole.relist);
  EXPECT_TRUE(whole.fits);
  EXPECT_EQ(whole.errors, "");
  EXPECT_EQ(whole.state,
            "batch/everything {|}\n"
            "ml-research/llm-pretrain {app.kubernetes.io/part-of=llm-pretrain,|"
            "training.kubeflow.org/job-name In [llm-pretrain,llm-pretrain-v2,];"
            "training.kubeflow.org/replica-type NotIn [launcher,];}\n"
            "ml-research/stale-from-list {|}\n"
            "@48402");

  expect_same_for_every_cut(initial, *stream, whole);
}

TEST(WatchStreamReplay, NodeStreamGivesTheSameStoreAndRelistForEverySplit) {
  const auto stream = read_text(fixture_path("kube/node-watch.jsonl"));
  ASSERT_TRUE(stream.has_value());
  const NodeStore initial = node_store();
  const auto whole = replay(initial, {std::string_view(*stream)});
  EXPECT_EQ(whole.results, "CCCBCCR");
  EXPECT_TRUE(whole.relist);
  EXPECT_EQ(whole.errors, "");
  EXPECT_EQ(whole.state,
            "gpu-a100-0 {kubernetes.io/hostname=gpu-a100-0,kubernetes.io/os=linux,"
            "node.kubernetes.io/instance-type=a2-ultragpu-8g,nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB,"
            "topology.kubernetes.io/region=europe-west4,topology.kubernetes.io/zone=europe-west4-a,}\n"
            "gpu-a100-1 {kubernetes.io/hostname=gpu-a100-1,nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB,"
            "topology.kubernetes.io/zone=europe-west4-c,}\n"
            "@9152");
  expect_same_for_every_cut(initial, *stream, whole);
}

TEST(WatchStreamReplay, UnicodeAnnotationSplitInsideAMultiByteCharacterStillParses) {
  // The first event carries "Ü", "–" and "≥": cut inside each of their UTF-8 sequences.
  const auto stream = read_text(fixture_path("kube/pdb-watch.jsonl"));
  ASSERT_TRUE(stream.has_value());
  const std::string first = stream->substr(0, stream->find('\n') + 1);
  int cuts = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if ((static_cast<unsigned char>(first[i]) & 0xC0) != 0x80) continue;  // a continuation byte
    ++cuts;
    BudgetStore store = budget_store();
    const auto got = replay(store, {std::string_view(first).substr(0, i), std::string_view(first).substr(i)});
    EXPECT_EQ(got.results, "C") << "cut at " << i << ": " << got.errors;
  }
  EXPECT_GE(cuts, 5);
}

// =======================================================================================
// Selector semantics of watched objects, through a ClusterSnapshot.

std::vector<std::string> selecting(const ClusterSnapshot& snapshot, const std::string& ns, const StringMap& labels) {
  std::vector<std::string> names;
  for (const auto& b : snapshot.budgets_in(ns)) {
    if (selects(b.selector, labels)) names.push_back(b.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WatchedSelectors, MatchLabelsAndExpressionsFromWatchedBudgetsSelectPods) {
  BudgetStore budgets = budget_store();
  NodeStore nodes = node_store();
  list_once(budgets, pdb_list_page("1", "", {}));
  list_once(nodes, R"({"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":[]})");
  apply_ok(budgets, event("ADDED", pdb_json("train", "gpu-workers", "2", R"({
      "matchLabels": {"app": "trainer"},
      "matchExpressions": [
        {"key": "role", "operator": "In", "values": ["worker", "ps"]},
        {"key": "tier", "operator": "NotIn", "values": ["debug"]},
        {"key": "checkpoint", "operator": "Exists"},
        {"key": "preemptible", "operator": "DoesNotExist"}]})")));
  apply_ok(budgets, event("ADDED", pdb_json("train", "null-selector", "3", "null")));
  apply_ok(budgets, event("ADDED", pdb_json("serve", "all", "4", "{}")));
  apply_ok(nodes, event("ADDED",
                        node_json("gpu-0", "5", R"({"topology.kubernetes.io/zone":"europe-west4-a","pool":"a100"})")));

  const ClusterSnapshot snapshot(budgets.values(), nodes.values());
  EXPECT_EQ(snapshot.budget_count(), 3u);

  struct Pod {
    const char* rule;
    std::string ns;
    StringMap labels;
    std::vector<std::string> selected_by;
  };
  const StringMap base = {{"app", "trainer"}, {"role", "worker"}, {"checkpoint", "s3"}};
  auto with = [&](StringMap extra) {
    StringMap out = base;
    for (auto& [k, v] : extra) out.insert_or_assign(k, v);
    return out;
  };
  auto without = [&](const std::string& key) {
    StringMap out = base;
    out.erase(key);
    return out;
  };
  const std::vector<Pod> pods = {
      {"every requirement holds", "train", base, {"gpu-workers"}},
      {"In: another listed value", "train", with({{"role", "ps"}}), {"gpu-workers"}},
      {"In: an unlisted value fails", "train", with({{"role", "launcher"}}), {}},
      {"In: a missing key fails", "train", without("role"), {}},
      {"NotIn: another value holds", "train", with({{"tier", "prod"}}), {"gpu-workers"}},
      {"NotIn: a listed value fails", "train", with({{"tier", "debug"}}), {}},
      {"Exists: an empty value is present", "train", with({{"checkpoint", ""}}), {"gpu-workers"}},
      {"Exists: a missing key fails", "train", without("checkpoint"), {}},
      {"DoesNotExist: a present key fails, whatever its value", "train", with({{"preemptible", "false"}}), {}},
      {"matchLabels: a different value fails", "train", with({{"app", "trainer-v2"}}), {}},
      {"matchLabels: a missing key fails", "train", without("app"), {}},
      {"empty selector: any pod of its namespace", "serve", base, {"all"}},
      {"empty selector: a pod without labels", "serve", {}, {"all"}},
      {"budgets of another namespace never apply", "other", base, {}},
  };
  for (const auto& pod : pods) {
    EXPECT_EQ(selecting(snapshot, pod.ns, pod.labels), pod.selected_by) << pod.rule;
  }

  const NodeInfo* node = snapshot.node("gpu-0");
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(kubegap::requirement_matches({"topology.kubernetes.io/zone", "In", {"europe-west4-a"}}, node->labels));
  EXPECT_FALSE(
      kubegap::requirement_matches({"topology.kubernetes.io/zone", "NotIn", {"europe-west4-a"}}, node->labels));

  // A MODIFIED event narrowing the selector shows in the next snapshot.
  apply_ok(budgets, event("MODIFIED", pdb_json("train", "gpu-workers", "6", R"({
      "matchLabels": {"app": "trainer"},
      "matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]})")));
  const ClusterSnapshot next(budgets.values(), nodes.values());
  EXPECT_EQ(selecting(next, "train", with({{"role", "ps"}})), std::vector<std::string>{});
  EXPECT_EQ(selecting(next, "train", with({{"role", "worker"}, {"preemptible", "true"}})),
            std::vector<std::string>{"gpu-workers"});
  // The earlier snapshot is a value: it still has the old selector.
  EXPECT_EQ(selecting(snapshot, "train", with({{"role", "ps"}})), std::vector<std::string>{"gpu-workers"});
}

}  // namespace
}  // namespace kgtest
