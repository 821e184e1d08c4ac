// The case library: every citation of every check resolves, every case is sourced, and
// checks and cases agree about which cite which.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "policies/checks.h"
#include "tests/webhook/test_util.h"
#include "webhook/case_library.h"
#include "webhook/yaml_json.h"

namespace kgtest {
namespace {

using kubegap::Case;
using kubegap::case_library;
using kubegap::check_registry;
using kubegap::ConfigError;
using kubegap::embedded_case_files;
using kubegap::find_check;
using kubegap::parse_case;

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

TEST(CaseLibrary, LoadsEveryEmbeddedFile) {
  EXPECT_FALSE(embedded_case_files().empty());
  EXPECT_EQ(case_library().cases().size(), embedded_case_files().size());
}

TEST(CaseLibrary, EveryCaseCitedByACheckExists) {
  for (const auto& check : check_registry()) {
    for (const auto& id : check.cases) {
      EXPECT_NE(case_library().find(id), nullptr)
          << "check " << check.id << " cites case " << id << ", which is not in cases/";
    }
  }
}

TEST(CaseLibrary, EveryCheckCitesAtLeastOneCase) {
  for (const auto& check : check_registry()) {
    EXPECT_FALSE(check.cases.empty()) << "check " << check.id << " cites no case";
  }
}

TEST(CaseLibrary, EveryCaseHasAnHttpsSource) {
  for (const Case& c : case_library().cases()) {
    ASSERT_FALSE(c.sources.empty()) << c.id;
    for (const auto& source : c.sources) {
      EXPECT_EQ(source.url.rfind("https://", 0), 0u) << c.id << ": " << source.url;
      EXPECT_GT(source.url.size(), std::string("https://").size()) << c.id;
      EXPECT_FALSE(source.title.empty()) << c.id << ": " << source.url;
    }
  }
}

TEST(CaseLibrary, IdsAreUniqueAndEqualTheFileName) {
  std::set<std::string> ids;
  const auto& files = embedded_case_files();
  const auto& cases = case_library().cases();
  ASSERT_EQ(files.size(), cases.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_TRUE(ids.insert(cases[i].id).second) << "duplicate case id " << cases[i].id;
    EXPECT_EQ(std::string(files[i].name), "cases/" + cases[i].id + ".yaml");
    EXPECT_EQ(case_library().find(cases[i].id), &cases[i]);
  }
}

TEST(CaseLibrary, EveryKeyFigureCitesOneOfItsCaseSources) {
  for (const Case& c : case_library().cases()) {
    EXPECT_FALSE(c.key_figures.empty()) << c.id;
    for (const auto& figure : c.key_figures) {
      const bool listed = std::any_of(c.sources.begin(), c.sources.end(),
                                      [&](const auto& s) { return s.url == figure.source; });
      EXPECT_TRUE(listed) << c.id << ": key figure \"" << figure.text << "\" cites "
                          << figure.source << ", which is not among the case's sources";
    }
  }
}

TEST(CaseLibrary, CasesNameOnlyKnownChecks) {
  for (const Case& c : case_library().cases()) {
    EXPECT_FALSE(c.checks.empty()) << c.id;
    for (const auto& id : c.checks) {
      EXPECT_NE(find_check(id), nullptr) << c.id << " names unknown check " << id;
    }
  }
}

TEST(CaseLibrary, ACheckCitingACaseIsListedByThatCase) {
  for (const auto& check : check_registry()) {
    for (const auto& id : check.cases) {
      const Case* c = case_library().find(id);
      if (c == nullptr) continue;  // reported by EveryCaseCitedByACheckExists
      EXPECT_TRUE(contains(c->checks, std::string(check.id)))
          << "check " << check.id << " cites " << id << ", but that case's `checks` omits it";
    }
  }
}

TEST(CaseLibrary, ACaseListingACheckIsCitedByThatCheck) {
  for (const Case& c : case_library().cases()) {
    for (const auto& id : c.checks) {
      const auto* check = find_check(id);
      if (check == nullptr) continue;  // reported by CasesNameOnlyKnownChecks
      EXPECT_TRUE(contains(check->cases, c.id))
          << "case " << c.id << " lists check " << id << ", but that check does not cite it";
    }
  }
}

TEST(CaseLibrary, EveryCaseIsCitedBySomeCheck) {
  for (const Case& c : case_library().cases()) {
    const bool cited = std::any_of(check_registry().begin(), check_registry().end(),
                                   [&](const auto& check) { return contains(check.cases, c.id); });
    EXPECT_TRUE(cited) << c.id << " is cited by no check";
  }
}

TEST(CaseLibrary, CasesAsJsonListsEveryCaseWithItsRequiredMembers) {
  const auto doc = parse_json(kubegap::cases_as_json(case_library()));
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), case_library().cases().size());
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    const auto& item = doc[i];
    const Case& c = case_library().cases()[i];
    ASSERT_TRUE(item.IsObject());
    for (const char* key : {"id", "title", "date"}) {
      ASSERT_NE(member(item, key), nullptr) << key;
      EXPECT_TRUE(item[key].IsString()) << key;
      EXPECT_FALSE(str(item[key]).empty()) << key;
    }
    EXPECT_EQ(str(item["id"]), c.id);
    EXPECT_EQ(str(item["title"]), c.title);
    ASSERT_NE(member(item, "checks"), nullptr);
    ASSERT_TRUE(item["checks"].IsArray());
    EXPECT_EQ(item["checks"].Size(), c.checks.size());
    ASSERT_NE(member(item, "sources"), nullptr);
    ASSERT_TRUE(item["sources"].IsArray());
    ASSERT_EQ(item["sources"].Size(), c.sources.size());
    for (const auto& source : item["sources"].GetArray()) {
      EXPECT_EQ(str(source["url"]).rfind("https://", 0), 0u);
    }
  }
}

TEST(CaseLibrary, CasesAsTextNamesEveryCaseAndSource) {
  const std::string text = kubegap::cases_as_text(case_library());
  for (const Case& c : case_library().cases()) {
    EXPECT_NE(text.find(c.id), std::string::npos) << c.id;
    for (const auto& s : c.sources) EXPECT_NE(text.find(s.url), std::string::npos) << s.url;
  }
}

// ---------------------------------------------------------------------------------------
// parse_case

const char* const kMinimalCase = R"(id: "x-2024"
title: "T"
date: "2024-01"
organisation: "O"
summary: "S"
key_figures:
  - text: "1 thing"
    source: "https://example.org/a"
lessons: ["L"]
checks: ["zone-spread"]
sources:
  - url: "https://example.org/a"
    title: "A"
)";

TEST(ParseCase, ReadsAMinimalCase) {
  const Case c = parse_case(kMinimalCase, "cases/x-2024.yaml");
  EXPECT_EQ(c.id, "x-2024");
  EXPECT_EQ(c.date, "2024-01");
  ASSERT_EQ(c.key_figures.size(), 1u);
  EXPECT_FALSE(c.key_figures[0].secondary);
  EXPECT_EQ(c.checks, (std::vector<std::string>{"zone-spread"}));
  ASSERT_EQ(c.sources.size(), 1u);
  EXPECT_EQ(c.sources[0].url, "https://example.org/a");
}

TEST(ParseCase, RejectsAnUnknownKeyNamingTheSourceAndKey) {
  const std::string text = std::string(kMinimalCase) + "severity: high\n";
  try {
    parse_case(text, "cases/x-2024.yaml");
    FAIL() << "accepted an unknown key";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("cases/x-2024.yaml:14: severity: unknown key", 0), 0u) << message;
  }
}

TEST(ParseCase, RejectsEveryMissingKeyNamingTheSourceAndKey) {
  for (const char* key : {"id", "title", "date", "organisation", "summary", "key_figures",
                          "lessons", "checks", "sources"}) {
    SCOPED_TRACE(key);
    // Drop the line(s) of `key` from the minimal case.
    std::string text;
    bool dropping = false;
    std::istringstream in(kMinimalCase);
    for (std::string line; std::getline(in, line);) {
      const bool top_level = !line.empty() && line[0] != ' ';
      if (top_level) dropping = line.rfind(std::string(key) + ":", 0) == 0;
      if (!dropping) text += line + "\n";
    }
    try {
      parse_case(text, "cases/broken.yaml");
      ADD_FAILURE() << "accepted a case without " << key;
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("cases/broken.yaml:", 0), 0u) << message;
      EXPECT_NE(message.find(std::string(key) + ": missing"), std::string::npos) << message;
    }
  }
}

TEST(ParseCase, RejectsAKeyFigureWithoutASource) {
  std::string text = kMinimalCase;
  text.replace(text.find("    source: \"https://example.org/a\"\n"),
               std::string("    source: \"https://example.org/a\"\n").size(), "");
  try {
    parse_case(text, "cases/x.yaml");
    FAIL() << "accepted a key figure without a source";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cases/x.yaml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("source: missing"), std::string::npos) << e.what();
  }
}

TEST(ParseCase, RejectsInvalidYamlNamingTheSource) {
  try {
    parse_case("id: [unclosed\n", "cases/bad.yaml");
    FAIL() << "accepted invalid YAML";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cases/bad.yaml:", 0), 0u) << e.what();
  }
}

TEST(ParseCase, RejectsATopLevelThatIsNotAMapping) {
  EXPECT_THROW(parse_case("- a\n- b\n", "cases/list.yaml"), ConfigError);
  EXPECT_THROW(parse_case("", "cases/empty.yaml"), ConfigError);
}

}  // namespace
}  // namespace kgtest
