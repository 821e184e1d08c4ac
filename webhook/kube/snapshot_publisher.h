#pragma once
// SnapshotPublisher: where reviews get the cluster view from, and where old views die.
// publish() swaps the current snapshot (one atomic store; a review's load never waits).
// A review may still hold the previous snapshot then, and whoever drops the last
// reference frees it: freeing 5,000 Nodes and their label index takes milliseconds that
// must not land on a review. So the publisher keeps every replaced snapshot until nobody
// else holds it and frees it itself, on its own executor (sweep() after each publish and
// then every `sweep_interval` while any is left).
//
//   auto publisher = std::make_shared<SnapshotPublisher>(strand);  // shared: its timer
//   publisher->publish(std::make_shared<const ClusterSnapshot>(...));   // on the strand
//   auto view = publisher->current();                                   // any thread

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "policies/cluster_view.h"

namespace kubegap {

class SnapshotPublisher : public std::enable_shared_from_this<SnapshotPublisher> {
 public:
  using Executor = boost::asio::strand<boost::asio::io_context::executor_type>;
  explicit SnapshotPublisher(Executor executor, std::chrono::milliseconds sweep_interval = std::chrono::seconds(1));

  std::shared_ptr<const ClusterSnapshot> current() const { return current_.load(); }
  // publish, sweep, stop: on the executor.
  void publish(std::shared_ptr<const ClusterSnapshot> next);
  // sweep: frees the replaced snapshots only the publisher still holds; how many are left.
  std::size_t sweep();
  void stop();
  std::size_t retired() const { return retired_.size(); }

 private:
  void schedule_sweep();

  std::atomic<std::shared_ptr<const ClusterSnapshot>> current_;
  std::vector<std::shared_ptr<const ClusterSnapshot>> retired_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds sweep_interval_;
  bool sweep_pending_ = false;
  bool stopped_ = false;
};

}  // namespace kubegap
