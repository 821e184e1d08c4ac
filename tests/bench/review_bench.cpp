// review_bench: what one review costs inside the webhook (decode, evaluate, encode; no TLS,
// no HTTP, no log), and how that cost moves with the cluster's size and the object's.
// Built in every tree; the figures mean something only in the release tree
// (tests/bench/run-bench.sh, ./dev bench). Prints tables; exits non-zero only when a review
// is not evaluated (the findings themselves are the property tests' business).
//
//   review_bench                 the tables
//   review_bench --repeat N CASE for callgrind: N reviews of one case (pool, zone, pytorchjob,
//                                4k, 64k, 1m, or a review's file), in the large view
//   review_bench --series FILE   also writes review cost by cluster size (3 to 5,000 nodes,
//                                twice as many PDBs) as CSV, for tests/bench/plot.py
//   review_bench --decode N FILE one-pass|dom
//                                for callgrind: N decodes of FILE by the one-pass decoder
//                                or the DOM decoder (tests/bench/decode_cost.sh)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "webhook/core/admission_codec.h"
#include "webhook/core/file_io.h"
#include "webhook/core/review_handler.h"

// (GCC pairs its own operator new with free() below and warns; they are a matched pair.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
// A counting allocator: every operator new of the process is counted, so a review's
// allocations are the difference across it (issue 32: allocations per review, in steady
// state, are printed beside the timings).
namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using kubegap::ClusterSnapshot;
using kubegap::DisruptionBudget;
using kubegap::NodeInfo;

constexpr const char* kNamespace = "ml-research";

// A node of a GPU cluster: 30 labels, as cloud providers and GPU operators set them.
NodeInfo make_node(int i, int zones, int pools) {
  NodeInfo node;
  node.name = "node-" + std::to_string(i);
  node.labels = {{"kubernetes.io/hostname", node.name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % zones)},
                 {"topology.kubernetes.io/region", "region-1"},
                 {"pool", "pool-" + std::to_string(i % pools)},
                 {"node.kubernetes.io/instance-type", "p5.48xlarge"},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.count", "8"},
                 {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  for (int l = static_cast<int>(node.labels.size()); l < 30; ++l) {
    node.labels.emplace("example.com/label-" + std::to_string(l), "value-" + std::to_string(l));
  }
  return node;
}

std::shared_ptr<const ClusterSnapshot> make_view(int nodes, int budgets) {
  std::vector<NodeInfo> node_list;
  for (int i = 0; i < nodes; ++i) node_list.push_back(make_node(i, 3, std::max(1, std::min(50, nodes))));
  std::vector<DisruptionBudget> budget_list;
  for (int i = 0; i < budgets; ++i) {
    kubegap::LabelSelector selector;
    selector.match_labels = {{"app", "job-" + std::to_string(i)}};
    budget_list.push_back({kNamespace, "pdb-" + std::to_string(i), selector});
  }
  return std::make_shared<const ClusterSnapshot>(std::move(budget_list), std::move(node_list));
}

std::string review(const std::string& group, const std::string& kind, const std::string& resource,
                   const std::string& object) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",)"
         R"("kind":{"group":")" +
         group + R"(","version":"v1","kind":")" + kind +
         R"("},)"
         R"("resource":{"group":")" +
         group + R"(","version":"v1","resource":")" + resource +
         R"("},)"
         R"("namespace":")" +
         std::string(kNamespace) +
         R"(","operation":"CREATE",)"
         R"("userInfo":{"username":"alice"},"object":)" +
         object + R"(,"oldObject":null,"dryRun":false}})";
}

std::string container(int i, int env_vars) {
  std::string env;
  for (int e = 0; e < env_vars; ++e) {
    env += std::string(e ? "," : "") + R"({"name":"VAR_)" + std::to_string(e) + R"(","value":")" +
           std::string(40, 'x') + R"("})";
  }
  return R"({"name":"trainer-)" + std::to_string(i) +
         R"(","image":"nvcr.io/nvidia/pytorch:24.05-py3","command":["torchrun","--nproc-per-node=8","train.py","--save-dir=/checkpoints"],)"
         R"("env":[)" +
         env +
         R"(],"resources":{"limits":{"nvidia.com/gpu":"8"}},)"
         R"("volumeMounts":[{"name":"ckpt","mountPath":"/checkpoints"}]})";
}

std::string pod_spec(const std::string& selector, int containers, int env_vars) {
  std::string list;
  for (int i = 0; i < containers; ++i) list += std::string(i ? "," : "") + container(i, env_vars);
  return R"({"containers":[)" + list +
         R"(],"volumes":[{"name":"ckpt","persistentVolumeClaim":{"claimName":"ckpt"}}],)"
         R"("nodeSelector":)" +
         selector + R"(,"restartPolicy":"Never"})";
}

std::string pod(const std::string& selector, int containers = 1, int env_vars = 0) {
  return review(
      "", "Pod", "pods",
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml-research","labels":{"app":"job-x"}},"spec":)" +
          pod_spec(selector, containers, env_vars) + "}");
}

std::string pytorchjob() {
  std::string replicas;
  const char* types[] = {"Master", "Worker", "Evaluator", "Launcher"};
  for (int i = 0; i < 4; ++i) {
    replicas += std::string(i ? "," : "") + "\"" + types[i] + R"(":{"replicas":)" + (i == 1 ? "16" : "1") +
                R"(,"template":{"metadata":{"labels":{"app":"job-x"}},"spec":)" +
                pod_spec(R"({"pool":"pool-7"})", 1, 0) + "}}";
  }
  return review(
      "kubeflow.org", "PyTorchJob", "pytorchjobs",
      R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"j","namespace":"ml-research"},)"
      R"("spec":{"pytorchReplicaSpecs":{)" +
          replicas + "}}}");
}

// A PyTorchJob with `n` replica types, each mounting its own emptyDir path: as many
// distinct checkpoint-volume messages as parts (the shape of issue 14's quadratic case).
std::string pytorchjob_parts(int n) {
  std::string replicas;
  for (int i = 0; i < n; ++i) {
    replicas += std::string(i ? "," : "") + "\"Role" + std::to_string(i) +
                R"(":{"replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"trainer",)"
                R"("command":["torchrun","train.py"],"resources":{"limits":{"nvidia.com/gpu":"8"}},)"
                R"("volumeMounts":[{"name":"v","mountPath":"/checkpoints/)" +
                std::to_string(i) + R"("}]}],"volumes":[{"name":"v","emptyDir":{}}]}}})";
  }
  return review(
      "kubeflow.org", "PyTorchJob", "pytorchjobs",
      R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"j","namespace":"ml-research"},)"
      R"("spec":{"pytorchReplicaSpecs":{)" +
          replicas + "}}}");
}

// A pod of about `bytes`: more containers and env vars as it grows.
std::string pod_of_size(std::size_t bytes) {
  const int per_container = 40;  // env vars
  const std::size_t container_bytes = container(0, per_container).size() + 1;
  const int containers = std::max(1, static_cast<int>(bytes / container_bytes));
  return pod(R"({"pool":"pool-7"})", containers, per_container);
}

struct Case {
  std::string name;
  std::string body;
};

std::vector<Case> view_cases() {
  return {{"GPU pod, pool nodeSelector", pod(R"({"pool":"pool-7"})")},
          {"GPU pod, zone-pinned", pod(R"({"topology.kubernetes.io/zone":"zone-1"})")},
          {"PyTorchJob, 4 replica types", pytorchjob()}};
}

std::vector<Case> size_cases() {
  return {{"4k", pod_of_size(4 * 1024)}, {"64k", pod_of_size(64 * 1024)}, {"1m", pod_of_size(1024 * 1024)}};
}

// per_batch: how many calls of `fn` take about 20 ms.
int per_batch(const std::function<void()>& fn) {
  using clock = std::chrono::steady_clock;
  int n = 1;
  for (;;) {
    const auto start = clock::now();
    for (int i = 0; i < n; ++i) fn();
    if (clock::now() - start > std::chrono::milliseconds(20) || n >= (1 << 20)) return n;
    n *= 2;
  }
}

double batch_us(const std::function<void()>& fn, int n) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// paired_us: the median time of one call of `a` and of `b`, their batches alternating
// (A B A B ...) so that a noisy machine slows both alike and the ratio stays honest.
std::pair<double, double> paired_us(const std::function<void()>& a, const std::function<void()>& b, int batches = 21) {
  const int na = per_batch(a), nb = per_batch(b);
  std::vector<double> ta, tb;
  for (int i = 0; i < batches; ++i) {
    ta.push_back(batch_us(a, na));
    tb.push_back(batch_us(b, nb));
  }
  return {median(ta), median(tb)};
}

double median_us(const std::function<void()>& fn, int batches = 15) {
  const int n = per_batch(fn);
  std::vector<double> t;
  for (int i = 0; i < batches; ++i) t.push_back(batch_us(fn, n));
  return median(t);
}

// allocations_per_review: operator new calls of one review, after a first (warm-up) one,
// the median of 9.
std::uint64_t allocations_per_review(const kubegap::ReviewHandler& handler, const std::string& body) {
  (void)handler.handle(body);
  std::vector<std::uint64_t> counts;
  for (int i = 0; i < 9; ++i) {
    const std::uint64_t before = g_allocations.load();
    (void)handler.handle(body);
    counts.push_back(g_allocations.load() - before);
  }
  std::sort(counts.begin(), counts.end());
  return counts[counts.size() / 2];
}

void expect_evaluated(const kubegap::ReviewHandler& handler, const Case& c) {
  const auto result = handler.handle(c.body);
  if (result.status != 200 || !result.evaluated) {
    std::cerr << "review_bench: " << c.name << " was not evaluated: " << result.error << "\n";
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const kubegap::PolicyStore policies(kubegap::default_policy());
  const kubegap::StaticClusterView small(make_view(3, 3));
  const kubegap::StaticClusterView large(make_view(5000, 10000));
  const kubegap::ReviewHandler in_small(policies, small);
  const kubegap::ReviewHandler in_large(policies, large);

  if (argc == 5 && std::string(argv[1]) == "--decode") {
    const int n = std::atoi(argv[2]);
    const auto body = kubegap::read_file(argv[3]);
    const bool dom = std::string(argv[4]) == "dom";
    std::size_t sink = 0;
    for (int i = 0; i < n; ++i) {
      const auto decoded = dom ? kubegap::decode_review_dom(body) : kubegap::decode_review(body);
      sink += decoded.request.uid.size() + (decoded.status == kubegap::DecodedReview::Status::kOk ? 1 : 0);
    }
    std::printf("%zu\n", sink);
    return 0;
  }

  if (argc == 4 && std::string(argv[1]) == "--repeat") {
    const int n = std::atoi(argv[2]);
    const std::string which = argv[3];
    std::map<std::string, std::string> bodies = {
        {"pool", view_cases()[0].body}, {"zone", view_cases()[1].body}, {"pytorchjob", view_cases()[2].body}};
    for (auto& c : size_cases()) bodies[c.name] = c.body;
    if (!bodies.count(which)) {
      std::ifstream file(which, std::ios::binary);
      if (!file) {
        std::cerr << "review_bench: no case or readable file " << which << "\n";
        return 2;
      }
      bodies[which].assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    }
    std::size_t sink = 0;
    for (int i = 0; i < n; ++i) sink += in_large.handle(bodies[which]).body.size();
    std::printf("%zu bytes answered, %llu allocations per review\n", sink,
                static_cast<unsigned long long>(allocations_per_review(in_large, bodies[which])));
    return 0;
  }

  std::string series_file;
  if (argc == 3 && std::string(argv[1]) == "--series") series_file = argv[2];
  std::printf(
      "review cost in-process (decode + evaluate + encode, medians of 21 alternating batches of about 20 ms)\n\n");
  std::printf("| review | 3 nodes, 3 PDBs | 5,000 nodes (30 labels), 10,000 PDBs | ratio (target <= 1.2) |\n");
  std::printf("|---|---|---|---|\n");
  for (const auto& c : view_cases()) {
    expect_evaluated(in_small, c);
    expect_evaluated(in_large, c);
    const auto [a, b] = paired_us([&] { (void)in_small.handle(c.body); }, [&] { (void)in_large.handle(c.body); });
    std::printf("| %s | %.1f us | %.1f us | %.2f |\n", c.name.c_str(), a, b, b / a);
  }
  std::printf("\n| review (3 nodes, 3 PDBs) | bytes | allocations per review (target for a single-part pod: 0) |\n");
  std::printf("|---|---|---|\n");
  for (const auto& c : view_cases()) {
    std::printf("| %s | %zu | %llu |\n", c.name.c_str(), c.body.size(),
                static_cast<unsigned long long>(allocations_per_review(in_small, c.body)));
  }
  std::printf("\n| pod size | bytes | us per review | us per KiB |\n|---|---|---|---|\n");
  for (const auto& c : size_cases()) {
    expect_evaluated(in_small, c);
    const double t = median_us([&] { (void)in_small.handle(c.body); }, 7);
    std::printf("| %s | %zu | %.1f | %.2f |\n", c.name.c_str(), c.body.size(), t,
                t / (static_cast<double>(c.body.size()) / 1024.0));
  }
  std::printf(
      "\n| PyTorchJob replica types | bytes | ms per review | us per part | cost / 1,000 parts' (target <= 20) |\n"
      "|---|---|---|---|---|\n");
  double thousand = 0;
  for (const int n : {1000, 16000}) {
    const Case c{std::to_string(n), pytorchjob_parts(n)};
    expect_evaluated(in_small, c);
    const double t = median_us([&] { (void)in_small.handle(c.body); }, 5);
    if (n == 1000) thousand = t;
    std::printf("| %d | %zu | %.1f | %.2f | %.1f |\n", n, c.body.size(), t / 1000, t / n, t / thousand);
  }
  // The decoders side by side (issue 32): the one-pass decoder against the DOM decoder it
  // replaced, batches alternating, on a kubectl-apply-shaped review and a 1 MiB pod.
  std::printf("\n| decode only | bytes | one-pass | DOM (before) | one-pass / DOM |\n|---|---|---|---|---|\n");
  std::vector<Case> decode_cases;
  try {
    decode_cases.push_back(
        {"kubectl apply of a GPU pod", kubegap::read_file("tests/bench/reviews/gpu-pod-applied.json")});
  } catch (const std::exception&) {
    // run from elsewhere than the source tree: that row is left out
  }
  decode_cases.push_back(size_cases()[2]);
  for (const auto& c : decode_cases) {
    const auto [a, b] =
        paired_us([&] { (void)kubegap::decode_review(c.body); }, [&] { (void)kubegap::decode_review_dom(c.body); });
    std::printf("| %s | %zu | %.2f us | %.2f us | %.2f |\n", c.name.c_str(), c.body.size(), a, b, a / b);
  }
  if (!series_file.empty()) {
    std::ofstream out(series_file);
    out << "nodes,budgets,case,us\n";
    for (const int nodes : {3, 500, 1000, 2000, 3500, 5000}) {
      const kubegap::StaticClusterView view(make_view(nodes, 2 * nodes));
      const kubegap::ReviewHandler handler(policies, view);
      for (const auto& c : view_cases()) {
        expect_evaluated(handler, c);
        out << nodes << "," << 2 * nodes << ",\"" << c.name << "\","
            << median_us([&] { (void)handler.handle(c.body); }, 9) << "\n";
      }
    }
    std::printf("\nreview cost by cluster size written to %s\n", series_file.c_str());
  }
  return 0;
}
