#include "webhook/core/file_io.h"

#include <fstream>
#include <sstream>

#include "webhook/core/errors.h"

namespace kubegap {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": read error");
  return content.str();
}

}  // namespace kubegap
