#include "webhook/core/memory_budget.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

namespace kubegap {

bool MemoryBudget::acquire_or_release(std::size_t bytes, std::size_t held) {
  std::size_t used = in_use_.load(std::memory_order_relaxed);
  for (;;) {
    const bool fits = bytes <= capacity_ && used <= capacity_ - bytes;
    if (in_use_.compare_exchange_weak(used, fits ? used + bytes : used - held, std::memory_order_relaxed)) return fits;
  }
}

bool MemoryBudget::Lease::grow_or_give_up(std::size_t bytes) {
  if (bytes <= held_) return true;
  const bool grown = budget_->acquire_or_release(bytes - held_, held_);
  held_ = grown ? bytes : 0;
  return grown;
}

bool MemoryBudget::Lease::grow_to(std::size_t bytes) {
  if (bytes <= held_) return true;
  if (!budget_->acquire_or_release(bytes - held_, 0)) return false;  // keeps what it held
  held_ = bytes;
  return true;
}

std::optional<std::size_t> parse_cgroup_memory_limit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  // cgroup v1 says "no limit" with LONG_MAX rounded down to a page; nothing real is 1 PiB.
  if (value >= (std::size_t{1} << 50)) return std::nullopt;
  return value;
}

namespace {

std::optional<std::size_t> limit_in(const char* path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parse_cgroup_memory_limit(text);
}

}  // namespace

std::optional<std::size_t> container_memory_limit() {
  // In a container the process's cgroup is mounted at the root of /sys/fs/cgroup.
  if (auto v2 = limit_in("/sys/fs/cgroup/memory.max")) return v2;
  return limit_in("/sys/fs/cgroup/memory/memory.limit_in_bytes");
}

std::size_t default_memory_budget(std::optional<std::size_t> container_limit, std::size_t max_body_bytes) {
  std::size_t budget = kUnlimitedBudget;
  if (container_limit) budget = *container_limit > kMemoryReserve ? *container_limit - kMemoryReserve : 0;
  const std::size_t one = worst_request_charge(max_body_bytes);
  return budget < one ? one : budget;
}

}  // namespace kubegap
