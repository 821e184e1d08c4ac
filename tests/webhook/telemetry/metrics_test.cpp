// Metrics: counters by status and check, a cumulative latency histogram, and output in
// the Prometheus text exposition format.
#include "webhook/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "policies/checks.h"

namespace kgtest {
namespace {

using kubegap::Metrics;

struct Sample {
  std::string name;
  std::string labels;  // the text between { and }, or empty
  std::string value;
};

// samples: every non-comment line of the exposition, failing the test on a line that is
// neither a comment nor `name{labels} value` / `name value`.
std::vector<Sample> samples(const std::string& text) {
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)\})? ([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?Inf|NaN))");
  static const std::regex kHelp(R"(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+)");
  static const std::regex kType(R"(# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))");
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, kHelp)) << line;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, kType)) << line;
    } else if (std::regex_match(line, m, kSample)) {
      out.push_back({m[1].str(), m[2].str(), m[3].str()});
    } else {
      ADD_FAILURE() << "not a valid exposition line: \"" << line << "\"";
    }
  }
  return out;
}

std::string value_of(const std::vector<Sample>& all, const std::string& name, const std::string& labels = "") {
  for (const auto& s : all) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  ADD_FAILURE() << "no sample " << name << "{" << labels << "}";
  return "";
}

struct Bucket {
  std::string le;
  std::uint64_t count;
};

std::vector<Bucket> buckets(const std::vector<Sample>& all) {
  std::vector<Bucket> out;
  static const std::regex kLe(R"re(le="([^"]*)")re");
  for (const auto& s : all) {
    if (s.name != "kubegap_review_duration_seconds_bucket") continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(s.labels, m, kLe)) << s.labels;
    out.push_back({m[1].str(), std::stoull(s.value)});
  }
  return out;
}

TEST(Metrics, RecordReviewCountsEachStatusSeparately) {
  Metrics metrics;
  metrics.record_review(200, 10, {});
  metrics.record_review(200, 10, {});
  metrics.record_review(400, 10, {});
  metrics.record_review(413, 10, {});
  EXPECT_EQ(metrics.reviews(200), 2u);
  EXPECT_EQ(metrics.reviews(400), 1u);
  EXPECT_EQ(metrics.reviews(413), 1u);
  EXPECT_EQ(metrics.reviews(404), 0u);
  EXPECT_EQ(metrics.reviews(500), 0u);

  const auto all = samples(metrics.render());
  EXPECT_EQ(value_of(all, "kubegap_reviews_total", R"(code="200")"), "2");
  EXPECT_EQ(value_of(all, "kubegap_reviews_total", R"(code="400")"), "1");
  EXPECT_EQ(value_of(all, "kubegap_reviews_total", R"(code="413")"), "1");
  EXPECT_EQ(value_of(all, "kubegap_reviews_total", R"(code="405")"), "0");
  EXPECT_EQ(value_of(all, "kubegap_reviews_total", R"(code="other")"), "0");
}

TEST(Metrics, UnlistedStatusesCountAsOther) {
  Metrics metrics;
  metrics.record_review(418, 10, {});
  metrics.record_review(502, 10, {});
  EXPECT_EQ(metrics.reviews(418), 2u);  // every unlisted status reads the shared counter
  EXPECT_EQ(metrics.reviews(200), 0u);
  EXPECT_EQ(value_of(samples(metrics.render()), "kubegap_reviews_total", R"(code="other")"), "2");
}

TEST(Metrics, LatencyHistogramIsCumulativeAndItsInfBucketEqualsTheCount) {
  Metrics metrics;
  metrics.record_review(200, 10, {});         // 0.00001 s: first bucket
  metrics.record_review(200, 50, {});         // 0.00005 s: on the first bound, counted in it
  metrics.record_review(200, 300, {});        // 0.0003 s: le=0.0005
  metrics.record_review(400, 20'000, {});     // 0.02 s: le=0.025
  metrics.record_review(200, 2'000'000, {});  // 2 s: le=2.5
  metrics.record_review(200, 3'000'000, {});  // 3 s: only +Inf

  const auto all = samples(metrics.render());
  const auto bs = buckets(all);
  ASSERT_GE(bs.size(), 2u);
  EXPECT_EQ(bs.back().le, "+Inf");
  std::map<std::string, std::uint64_t> by_le;
  double previous_bound = -1;
  std::uint64_t previous_count = 0;
  for (const auto& b : bs) {
    by_le[b.le] = b.count;
    EXPECT_GE(b.count, previous_count) << "bucket le=" << b.le << " is not cumulative";
    previous_count = b.count;
    const double bound = b.le == "+Inf" ? 1e300 : std::stod(b.le);
    EXPECT_GT(bound, previous_bound) << "bounds not increasing at " << b.le;
    previous_bound = bound;
  }
  EXPECT_EQ(by_le.at("5e-05"), 2u);
  EXPECT_EQ(by_le.at("0.0001"), 2u);
  EXPECT_EQ(by_le.at("0.0005"), 3u);
  EXPECT_EQ(by_le.at("0.01"), 3u);
  EXPECT_EQ(by_le.at("0.025"), 4u);
  EXPECT_EQ(by_le.at("0.5"), 4u);
  EXPECT_EQ(by_le.at("1"), 4u);
  EXPECT_EQ(by_le.at("2.5"), 5u);
  EXPECT_EQ(by_le.at("+Inf"), 6u);
  EXPECT_EQ(value_of(all, "kubegap_review_duration_seconds_count"), "6");
  EXPECT_NEAR(std::stod(value_of(all, "kubegap_review_duration_seconds_sum")), 5.02036, 1e-5);
}

TEST(Metrics, FindingsAreCountedByCheckAndUnknownIdsAreIgnored) {
  Metrics metrics;
  metrics.record_review(200, 10, {"zone-spread", "checkpoint-volume"});
  metrics.record_review(200, 10, {"zone-spread", "no-such-check"});
  EXPECT_EQ(metrics.findings("zone-spread"), 2u);
  EXPECT_EQ(metrics.findings("checkpoint-volume"), 1u);
  EXPECT_EQ(metrics.findings("disruption-budget"), 0u);
  EXPECT_EQ(metrics.findings("no-such-check"), 0u);

  const auto all = samples(metrics.render());
  EXPECT_EQ(value_of(all, "kubegap_findings_total", R"(check="zone-spread")"), "2");
  EXPECT_EQ(value_of(all, "kubegap_findings_total", R"(check="checkpoint-volume")"), "1");
  // Every registered check has a series, so a dashboard sees zeros, not gaps.
  std::size_t series = 0;
  for (const auto& check : kubegap::check_registry()) {
    value_of(all, "kubegap_findings_total", "check=\"" + std::string(check.id) + "\"");
    ++series;
  }
  std::size_t rendered = 0;
  for (const auto& s : all) rendered += s.name == "kubegap_findings_total" ? 1 : 0;
  EXPECT_EQ(rendered, series);
}

TEST(Metrics, InFlightGaugeFollowsStartedAndFinished) {
  Metrics metrics;
  metrics.request_started();
  metrics.request_started();
  metrics.request_finished();
  EXPECT_EQ(value_of(samples(metrics.render()), "kubegap_in_flight_requests"), "1");
  metrics.request_finished();
  EXPECT_EQ(value_of(samples(metrics.render()), "kubegap_in_flight_requests"), "0");
}

TEST(Metrics, RenderIsValidPrometheusTextWithATypeForEveryFamily) {
  Metrics metrics;
  metrics.record_review(200, 123, {"gpu-health-tolerations"});
  metrics.record_review(404, 7, {});
  const std::string text = metrics.render();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');

  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::set<std::string> seen_series;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      EXPECT_TRUE(types.emplace(name, type).second) << "second TYPE for " << name;
      EXPECT_TRUE(helped.contains(name)) << "TYPE before HELP for " << name;
    } else if (line.rfind("# HELP ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name;
      words >> name;
      helped.insert(name);
    }
  }
  for (const auto& s : samples(text)) {
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string suf = suffix;
      if (family.size() > suf.size() && family.ends_with(suf) &&
          types.contains(family.substr(0, family.size() - suf.size()))) {
        family = family.substr(0, family.size() - suf.size());
      }
    }
    ASSERT_TRUE(types.contains(family)) << s.name << " has no # TYPE line";
    if (types[family] == "counter") {
      EXPECT_TRUE(s.name.ends_with("_total")) << s.name;
    }
    EXPECT_TRUE(seen_series.insert(s.name + "{" + s.labels + "}").second)
        << "duplicate series " << s.name << "{" << s.labels << "}";
  }
  EXPECT_EQ(types["kubegap_reviews_total"], "counter");
  EXPECT_EQ(types["kubegap_review_duration_seconds"], "histogram");
  EXPECT_EQ(types["kubegap_findings_total"], "counter");
  EXPECT_EQ(types["kubegap_in_flight_requests"], "gauge");
  EXPECT_EQ(types["kubegap_build_info"], "gauge");
}

TEST(Metrics, FreshMetricsRenderZeros) {
  Metrics metrics;
  const auto all = samples(metrics.render());
  for (const auto& s : all) {
    if (s.name == "kubegap_build_info") {
      EXPECT_EQ(s.value, "1");
      EXPECT_NE(s.labels.find("version=\""), std::string::npos);
    } else {
      EXPECT_EQ(s.value, "0") << s.name << "{" << s.labels << "}";
    }
  }
}

TEST(Metrics, ConcurrentRecordingLosesNothing) {
  Metrics metrics;
  constexpr int kThreads = 4;
  constexpr int kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < kEach; ++i) {
        metrics.request_started();
        metrics.record_review(i % 2 == 0 ? 200 : 400, 100, {"zone-spread"});
        metrics.request_finished();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(metrics.reviews(200), std::uint64_t{kThreads * kEach / 2});
  EXPECT_EQ(metrics.reviews(400), std::uint64_t{kThreads * kEach / 2});
  EXPECT_EQ(metrics.findings("zone-spread"), std::uint64_t{kThreads * kEach});
  const auto all = samples(metrics.render());
  EXPECT_EQ(value_of(all, "kubegap_review_duration_seconds_count"), std::to_string(kThreads * kEach));
  EXPECT_EQ(value_of(all, "kubegap_review_duration_seconds_bucket", R"(le="+Inf")"), std::to_string(kThreads * kEach));
  EXPECT_EQ(value_of(all, "kubegap_in_flight_requests"), "0");
}

}  // namespace
}  // namespace kgtest
