#pragma once
// The errors of input the operator or a user gave us. ConfigError is thrown at start-up
// and by the offline commands (a file is wrong: fatal); InputProblem is collected, never
// thrown, where one bad document must not cost the others (`check`, `--cluster-state`).
//
//   try { load(path); } catch (const ConfigError& e) { std::cerr << e.what(); return 2; }

#include <stdexcept>
#include <string>

namespace kubegap {

// ConfigError: a file the operator gave us is wrong; the message names file and line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// InputProblem: why (part of) an input could not be read. line 0: the whole file; no
// file: the whole input.
struct InputProblem {
  std::string file;
  int line = 0;
  std::string message;

  // text: "file:line: message", "file: message" for line 0, the message alone without a file.
  std::string text() const {
    if (file.empty()) return message;
    return line > 0 ? file + ":" + std::to_string(line) + ": " + message : file + ": " + message;
  }
};

}  // namespace kubegap
