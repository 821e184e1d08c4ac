// The replay driver: the main() that libFuzzer would supply, for builds without it (g++,
// the dev tree). It runs every file of the given directories (sorted, dot files
// skipped) and files through LLVMFuzzerTestOneInput once, so the checked-in corpus and
// every past crash (tests/fuzz/regressions/<target>/) are a test everywhere the suite
// runs. A crashing input crashes this driver too, and its name was printed just before.
//
//   review_fuzz_replay tests/fuzz/corpus/review tests/fuzz/regressions/review
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_of(const fs::path& path) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    out.push_back(path);
    return out;
  }
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.is_regular_file() && !entry.path().filename().string().starts_with(".")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    // A target without regressions yet has no directory (git keeps no empty ones).
    if (!fs::exists(argv[i], ec)) {
      std::printf("%s: absent, nothing to replay\n", argv[i]);
      continue;
    }
    for (const auto& input : inputs_of(argv[i])) {
      std::ifstream file(input, std::ios::binary);
      const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      if (!file.good() && !file.eof()) {
        std::fprintf(stderr, "%s: cannot read\n", input.c_str());
        return 1;
      }
      std::printf("replaying %s (%zu bytes)\n", input.c_str(), data.size());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      ++count;
    }
  }
  std::printf("%zu input(s) replayed without a crash\n", count);
  return count > 0 ? 0 : 1;
}
