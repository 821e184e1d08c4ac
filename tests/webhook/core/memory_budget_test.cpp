// MemoryBudget: leases, the cgroup limit parser and the default budget.
#include "webhook/core/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

namespace kubegap {
namespace {

TEST(MemoryBudget, LeaseGrowsWithinCapacityAndGivesBackOnDestruction) {
  auto budget = std::make_shared<MemoryBudget>(1000);
  {
    MemoryBudget::Lease a(budget);
    EXPECT_TRUE(a.grow_to(600));
    EXPECT_TRUE(a.grow_to(400)) << "shrinking is a no-op, not a failure";
    EXPECT_EQ(a.held(), 600u);
    MemoryBudget::Lease b(budget);
    EXPECT_FALSE(b.grow_to(401)) << "600 + 401 is over 1000";
    EXPECT_EQ(b.held(), 0u);
    EXPECT_TRUE(b.grow_to(400));
    EXPECT_EQ(budget->in_use(), 1000u);
    EXPECT_FALSE(a.grow_to(601));
    EXPECT_EQ(a.held(), 600u) << "a failed growth keeps what it held";
  }
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(MemoryBudget, ResetGivesBackBeforeTheLeaseEnds) {
  auto budget = std::make_shared<MemoryBudget>(100);
  MemoryBudget::Lease lease(budget);
  ASSERT_TRUE(lease.grow_to(100));
  lease.reset();
  EXPECT_EQ(budget->in_use(), 0u);
  EXPECT_EQ(lease.held(), 0u);
  MemoryBudget::Lease other(budget);
  EXPECT_TRUE(other.grow_to(100));
}

TEST(MemoryBudget, RefusesARequestLargerThanTheWholeBudget) {
  auto budget = std::make_shared<MemoryBudget>(100);
  MemoryBudget::Lease lease(budget);
  EXPECT_FALSE(lease.grow_to(101));
  EXPECT_FALSE(lease.grow_to(SIZE_MAX)) << "no overflow on a huge charge";
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(MemoryBudget, ConcurrentLeasesNeverExceedTheCapacity) {
  auto budget = std::make_shared<MemoryBudget>(10);
  std::atomic<int> granted{0};
  std::atomic<std::size_t> peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        MemoryBudget::Lease lease(budget);
        if (!lease.grow_to(3)) continue;
        ++granted;
        std::size_t seen = budget->in_use(), was = peak.load();
        while (seen > was && !peak.compare_exchange_weak(was, seen)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(granted.load(), 0);
  EXPECT_LE(peak.load(), 9u) << "three leases of 3 fit in 10, a fourth never";
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(MemoryBudget, GrowOrGiveUpReleasesEverythingOnFailure) {
  auto budget = std::make_shared<MemoryBudget>(1000);
  MemoryBudget::Lease a(budget);
  MemoryBudget::Lease b(budget);
  ASSERT_TRUE(a.grow_or_give_up(500));
  ASSERT_TRUE(b.grow_or_give_up(400));
  EXPECT_FALSE(a.grow_or_give_up(700)) << "700 + 400 is over 1000";
  EXPECT_EQ(a.held(), 0u);
  EXPECT_EQ(budget->in_use(), 400u) << "a's 500 came back with the failure";
  EXPECT_TRUE(b.grow_or_give_up(900)) << "so b, growing next, fits";
}

TEST(MemoryBudget, OfTwoLeasesOutgrowingTogetherOneAlwaysFinishes) {
  // The abuse test's two 8 MiB bodies in miniature: each alone fits, both together do
  // not; they grow in lockstep on two threads (a barrier after every step). A lease that
  // failed and kept its bytes until the step ended (grow_to) would fail the other too.
  for (int round = 0; round < 200; ++round) {
    auto budget = std::make_shared<MemoryBudget>(100);
    std::atomic<int> finished{0};
    std::barrier step(2);
    const auto body = [&] {
      MemoryBudget::Lease lease(budget);
      for (std::size_t size = 10; size <= 80; size += 10) {
        const bool grown = lease.grow_or_give_up(size);
        step.arrive_and_wait();
        if (!grown) {
          step.arrive_and_drop();
          return;
        }
      }
      ++finished;
    };
    std::thread one(body), two(body);
    one.join();
    two.join();
    ASSERT_EQ(finished.load(), 1) << "round " << round;
    EXPECT_EQ(budget->in_use(), 0u);
  }
}

TEST(MemoryBudget, RequestChargeIsTheBodysCopiesNotADom) {
  // The body as read (up to twice its size) and the decoder's copy; what the decode
  // keeps is asked for as it grows (DecodeReviewBudget in admission_codec_test).
  EXPECT_EQ(request_charge(8u << 20), kRequestOverhead + 3 * (std::size_t{8} << 20));
  EXPECT_EQ(request_charge(0), kRequestOverhead);
}

TEST(CgroupMemoryLimit, ParsesV2AndV1Files) {
  EXPECT_EQ(parse_cgroup_memory_limit("268435456\n"), std::optional<std::size_t>(268435456));
  EXPECT_EQ(parse_cgroup_memory_limit("max\n"), std::nullopt) << "cgroup v2: no limit";
  EXPECT_EQ(parse_cgroup_memory_limit("9223372036854771712\n"), std::nullopt) << "cgroup v1: no limit";
  EXPECT_EQ(parse_cgroup_memory_limit(""), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("12ab"), std::nullopt);
  EXPECT_EQ(parse_cgroup_memory_limit("-1"), std::nullopt);
}

TEST(DefaultMemoryBudget, IsTheContainerLimitLessTheReserve) {
  const std::size_t mib = 1 << 20;
  EXPECT_EQ(default_memory_budget(256 * mib, 1 * mib), 256 * mib - kMemoryReserve);
  EXPECT_EQ(default_memory_budget(std::nullopt, 1 * mib), kUnlimitedBudget);
}

TEST(DefaultMemoryBudget, NeverRefusesTheLargestAllowedRequestForever) {
  const std::size_t mib = 1 << 20;
  EXPECT_EQ(default_memory_budget(160 * mib, 8 * mib), worst_request_charge(8 * mib));
  EXPECT_EQ(default_memory_budget(32 * mib, 8 * mib), worst_request_charge(8 * mib)) << "limit below the reserve";
  EXPECT_GT(worst_request_charge(8 * mib), request_charge(8 * mib) + 8 * mib * kKeptValueBytes / 2 - 1)
      << "room for a decode that keeps a value every two bytes";
}

}  // namespace
}  // namespace kubegap
