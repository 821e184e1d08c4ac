#pragma once
// PolicyStore: the policy every review reads, replaced whole when the policy file is
// reloaded. A review holds the shared_ptr it got for its whole evaluation, so a reload
// mid-review cannot change the rules under it.
//
//   PolicyStore store(load_policy_file(path));
//   std::shared_ptr<const Policy> policy = store.get();

#include <atomic>
#include <memory>

#include "policies/policy.h"

namespace kubegap {

// PolicyStore: the current policy, swapped atomically when a new one is loaded.
class PolicyStore {
 public:
  explicit PolicyStore(Policy policy) : current_(std::make_shared<const Policy>(std::move(policy))) {}
  std::shared_ptr<const Policy> get() const { return current_.load(); }
  void set(Policy policy) { current_.store(std::make_shared<const Policy>(std::move(policy))); }

 private:
  std::atomic<std::shared_ptr<const Policy>> current_;
};

}  // namespace kubegap
