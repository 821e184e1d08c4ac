#pragma once
// The case library: public incident reports that every finding cites. The data files in
// cases/ are compiled into the binary (cmake/EmbedCases.cmake) and parsed once.
//
//   const CaseLibrary& library = case_library();     // throws ConfigError if a file is bad
//   const Case* c = library.find("osm-amsterdam-power-2022");

#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

struct EmbeddedCaseFile {
  const char* name;     // "cases/<id>.yaml"
  const char* content;  // the file's text
};
const std::vector<EmbeddedCaseFile>& embedded_case_files();

struct KeyFigure {
  std::string text;
  std::string source;
  bool secondary = false;
};

struct CaseSource {
  std::string url;
  std::string title;
};

// CaseCheck: a check the case backs, and in one line why (what in the source bears on it).
struct CaseCheck {
  std::string id;
  std::string why;
};

// Case: what the sources say (`summary`, `key_figures`, each figure with its own source
// URL and `secondary` when only press or quotes back it) kept apart from our reading of
// it (`lessons`, `checks`).
struct Case {
  std::string id;
  std::string title;
  std::string date;
  std::string organisation;
  std::string summary;
  std::vector<KeyFigure> key_figures;
  std::vector<std::string> lessons;
  std::vector<CaseCheck> checks;
  std::vector<CaseSource> sources;

  // backs: the case names `check` in its `checks`; nullptr otherwise, else the entry.
  const CaseCheck* backs(std::string_view check) const;
};

class CaseLibrary {
 public:
  explicit CaseLibrary(std::vector<Case> cases) : cases_(std::move(cases)) {}
  const std::vector<Case>& cases() const { return cases_; }
  const Case* find(std::string_view id) const;

 private:
  std::vector<Case> cases_;
};

// parse_case: one case file; throws ConfigError naming `source` on a missing or unknown key.
Case parse_case(std::string_view yaml_text, const std::string& source);

// case_library: the compiled-in library, parsed on first use.
const CaseLibrary& case_library();

// The `cases` command's output. By check: each check (or only `check_id`), its fix, and
// the cases it cites in the order it cites them (the first is printed in warnings), each
// with the one-line reason it backs the check. One case: everything in its file.
std::string cases_by_check_text(const CaseLibrary& library, std::string_view check_id = {});
std::string case_as_text(const Case& c);
// JSON: {"checks": [{id, summary, remedy, cases: [{id, why}]}], "cases": [<case>...]};
// with `check_id`, that check and the cases it cites.
std::string cases_as_json(const CaseLibrary& library, std::string_view check_id = {});
std::string case_as_json(const Case& c);

}  // namespace kubegap
