#pragma once
// FileWatcher: calls back when any of a set of files changes. Kubernetes updates Secret
// and ConfigMap volumes by swapping a `..data` symlink, which an inotify watch on the file
// path does not follow; polling stat() (through the symlinks) sees every swap.
//
//   FileWatcher watcher(ioc, {cert, key}, std::chrono::seconds(2), [&] { return reload(); });
//
// The callback returns whether it took the change; if not, it is called again on the
// next tick while the files still differ from the last taken state.
//   watcher.start();

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kubegap {

class FileWatcher {
 public:
  FileWatcher(boost::asio::io_context& ioc, std::vector<std::string> paths, std::chrono::milliseconds interval,
              std::function<bool()> on_change);
  ~FileWatcher();
  void start();
  void stop();

  // signature: what stat() says of each file (device, inode, size, mtime), "missing" if
  // it cannot be read. Exposed for tests.
  static std::string signature(const std::vector<std::string>& paths);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kubegap
