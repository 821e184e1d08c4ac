// Fuzz target: one manifest file through `check` (check_text: load_objects' YAML/JSON
// reading, Lists, AdmissionReviews, the cluster view from the input, evaluate) and the
// three report formats. `check` never throws on a file's content (offline_check.h); the
// JSON and SARIF reports must stay JSON whatever the file said.
#include <cstddef>
#include <cstdint>
#include <string>

#include "policies/policy.h"
#include "tests/fuzz/fuzz_oracle.h"
#include "webhook/report/offline_check.h"
#include "webhook/report/report_render.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const kubegap::CheckReport report = kubegap::check_text(text, "fuzz.yaml", kubegap::default_policy());
  (void)kubegap::render_text(report, {.explain = true, .show_skipped = true, .colour = true});
  kgfuzz::require_json(kubegap::render_json(report), "the JSON report is JSON");
  kgfuzz::require_json(kubegap::render_sarif(report), "the SARIF report is JSON");
  return 0;
}
