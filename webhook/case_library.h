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

struct Case {
  std::string id;
  std::string title;
  std::string date;
  std::string organisation;
  std::string summary;
  std::vector<KeyFigure> key_figures;
  std::vector<std::string> lessons;
  std::vector<std::string> checks;
  std::vector<CaseSource> sources;
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

// cases_as_json / cases_as_text: the `cases` command's output.
std::string cases_as_json(const CaseLibrary& library);
std::string cases_as_text(const CaseLibrary& library);

}  // namespace kubegap
