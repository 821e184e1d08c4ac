#pragma once
// MemoryBudget: the bytes that reviews in flight may cost, shared by every connection.
// A review is charged before its body is read (by Content-Length; a chunked body as it
// grows), and its decode for what it keeps, so a burst of large bodies is answered 503 +
// Retry-After instead of taking the process past its container limit, where the kernel
// would kill it and every review in flight with it.
//
//   auto budget = std::make_shared<MemoryBudget>(192 << 20);
//   MemoryBudget::Lease lease(budget);
//   if (!lease.grow_to(request_charge(content_length))) { /* 503 */ }
//   ...                                  // the lease returns its bytes when destroyed

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "webhook/core/review_scan.h"

namespace kubegap {

// kBodyCopies: what a request is charged per body byte before its decode: the body as
// read (a string that may have grown to twice the body) and the decoder's in-situ copy.
// What the decode keeps is charged as it grows (decode_review's `reserve`, by
// kKeptValueBytes per kept value, review_scan.h), so a body nobody reads (8 MiB of
// numbers) costs its copies and a frame stack, not a DOM of every value. Between requests
// each review thread keeps one spare decode storage (review_storage.h: a text of at most
// 1 MiB and 80 KiB of first chunks), outside the budget: bounded by the thread count.
inline constexpr std::size_t kBodyCopies = 3;
// kRequestOverhead: what any request costs besides its body (header, buffers, response).
inline constexpr std::size_t kRequestOverhead = 64 * 1024;

// request_charge: what a request with a body of `body_bytes` is charged as it is read.
constexpr std::size_t request_charge(std::size_t body_bytes) { return kRequestOverhead + kBodyCopies * body_bytes; }

// worst_request_charge: the most a request of `body_bytes` can be charged in all: read,
// then a decode that keeps every value, at most one per two bytes ("1,").
constexpr std::size_t worst_request_charge(std::size_t body_bytes) {
  return request_charge(body_bytes) + kKeptValueBytes * (body_bytes / 2 + 1);
}

class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t capacity) : capacity_(capacity) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  std::size_t capacity() const { return capacity_; }
  std::size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // could_hold: whether `bytes` more fit now (advisory: nothing is taken).
  bool could_hold(std::size_t bytes) const { return bytes <= capacity_ && in_use() <= capacity_ - bytes; }

  // Lease: one request's charge. Grows on demand and gives everything back when destroyed.
  // It shares the budget: a coroutine frame destroyed at exit, after the server that made
  // the budget, still returns its charge to a live object.
  class Lease {
   public:
    explicit Lease(std::shared_ptr<MemoryBudget> budget) : budget_(std::move(budget)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { budget_->release(held_); }

    // grow_to: holds `bytes` in all; false (holding what it held) when the budget cannot
    // give the difference now.
    bool grow_to(std::size_t bytes);
    // grow_or_give_up: as grow_to, but a failure gives back everything held in the same
    // atomic step. Two bodies that both outgrow the budget together then cannot both be
    // shed: the first to fail frees its bytes before the other can see the budget full.
    bool grow_or_give_up(std::size_t bytes);
    std::size_t held() const { return held_; }
    // reset: gives back everything held now (the work it paid for is done).
    void reset() {
      budget_->release(held_);
      held_ = 0;
    }

   private:
    std::shared_ptr<MemoryBudget> budget_;
    std::size_t held_ = 0;
  };

 private:
  // acquire_or_release: acquire `bytes`, or else give back `held` (one atomic step; 0
  // keeps everything).
  bool acquire_or_release(std::size_t bytes, std::size_t held);
  void release(std::size_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

  const std::size_t capacity_;
  std::atomic<std::size_t> in_use_{0};
};

// parse_cgroup_memory_limit: the limit in a cgroup v2 `memory.max` or v1
// `memory.limit_in_bytes` file; nullopt for "max", v1's "no limit" (a page-rounded
// LONG_MAX) or anything unreadable.
std::optional<std::size_t> parse_cgroup_memory_limit(std::string_view text);

// container_memory_limit: this process's cgroup memory limit, v2 then v1; nullopt when
// there is none (a developer's machine).
std::optional<std::size_t> container_memory_limit();

// kUnlimitedBudget: the budget without a container limit: enough for several
// maximum-size reviews at once, still bounded.
inline constexpr std::size_t kUnlimitedBudget = std::size_t{1} << 30;
// kMemoryReserve: what the budget leaves of the container limit for everything else
// (the process itself, TLS state of idle connections, the live cluster view).
inline constexpr std::size_t kMemoryReserve = std::size_t{64} << 20;

// default_memory_budget: the container limit less kMemoryReserve, or kUnlimitedBudget
// without a limit; never less than the worst request of `max_body_bytes` (a budget that
// could never hold the largest allowed request would refuse it forever).
std::size_t default_memory_budget(std::optional<std::size_t> container_limit, std::size_t max_body_bytes);

}  // namespace kubegap
