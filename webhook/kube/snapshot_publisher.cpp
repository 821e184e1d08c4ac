#include "webhook/kube/snapshot_publisher.h"

#include <algorithm>

namespace kubegap {

SnapshotPublisher::SnapshotPublisher(Executor executor, std::chrono::milliseconds sweep_interval)
    : timer_(std::move(executor)), sweep_interval_(sweep_interval) {}

void SnapshotPublisher::publish(std::shared_ptr<const ClusterSnapshot> next) {
  auto previous = current_.exchange(std::move(next));
  if (previous) retired_.push_back(std::move(previous));
  if (sweep() > 0) schedule_sweep();
}

std::size_t SnapshotPublisher::sweep() {
  // use_count() == 1: only this list holds it, and nobody can get it again (it is no
  // longer current_), so the count cannot grow back: freeing it here is safe.
  std::erase_if(retired_, [](const auto& snapshot) { return snapshot.use_count() == 1; });
  return retired_.size();
}

void SnapshotPublisher::schedule_sweep() {
  if (sweep_pending_ || stopped_) return;
  sweep_pending_ = true;
  timer_.expires_after(sweep_interval_);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->sweep_pending_ = false;
    if (ec || self->stopped_) return;
    if (self->sweep() > 0) self->schedule_sweep();
  });
}

void SnapshotPublisher::stop() {
  stopped_ = true;
  timer_.cancel();
}

}  // namespace kubegap
