#pragma once
// A CheckReport (from `check`, `scan` or the background audit) as people and tools read
// it: text for a terminal, JSON for scripts, SARIF 2.1.0 for code-scanning services.
//
//   CheckReport report = check_paths({"k8s/"}, policy);
//   std::cout << render_sarif(report);

#include <string>

#include "webhook/report/offline_check.h"

namespace kubegap {

struct TextOptions {
  bool explain = false;       // under each object, the class of each part and why
  bool show_skipped = false;  // one line per skipped object instead of one summary line
  bool colour = false;        // ANSI colour (the caller decides: a terminal, no NO_COLOR)
};

std::string render_text(const CheckReport& report, const TextOptions& options = {});
std::string render_json(const CheckReport& report);
// render_json_compact: render_json on one line, for a program that reads it whole (the MCP
// tools): the first `limit` objects, `omittedObjects` counting the rest, and in `summary`
// `objectsWithFindings` and `byCheck` (findings by check), over every object.
std::string render_json_compact(const CheckReport& report, std::size_t limit);
// render_sarif: SARIF 2.1.0, one result per finding with its file and line.
std::string render_sarif(const CheckReport& report);

}  // namespace kubegap
