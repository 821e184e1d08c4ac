// Fuzz target: a watch stream from the API server (webhook/kube/watch_stream.h). The first
// byte sets the chunk size the stream arrives in; the rest is the stream, cut into lines
// by LineSplitter and applied as events to a Node store and a PDB store, then read once
// more as a list page; the stores then make a cluster snapshot, as the watcher does.
// Besides "no crash": the lines must not depend on how the stream was chunked.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "tests/fuzz/fuzz_oracle.h"
#include "webhook/kube/watch_stream.h"

namespace {

std::vector<std::string> lines_of(std::string_view stream, std::size_t chunk) {
  kubegap::LineSplitter splitter;
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < stream.size(); at += chunk) {
    if (!splitter.feed(stream.substr(at, chunk), [&](std::string_view line) { lines.emplace_back(line); })) break;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = std::size_t{data[0]} + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const std::vector<std::string> lines = lines_of(stream, chunk);
  kgfuzz::require(lines == lines_of(stream, std::max<std::size_t>(stream.size(), 1)),
                  "the lines do not depend on the chunking");

  kubegap::ResourceStore<kubegap::NodeInfo> nodes(kubegap::decode_node_object, kubegap::node_key);
  kubegap::ResourceStore<kubegap::DisruptionBudget> budgets(kubegap::decode_budget_object, kubegap::budget_key);
  std::string error;
  for (const auto& line : lines) {
    (void)nodes.apply_event(line, &error);
    (void)budgets.apply_event(line, &error);
  }
  std::string continue_token;
  nodes.start_list();
  if (nodes.add_list_page(stream, continue_token).empty()) nodes.finish_list();
  budgets.start_list();
  if (budgets.add_list_page(stream, continue_token).empty()) budgets.finish_list();
  const kubegap::ClusterSnapshot snapshot(budgets.values(), nodes.values());
  (void)snapshot;
  return 0;
}
