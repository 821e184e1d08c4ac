// The case library: every citation of every check resolves, every case is sourced, and
// checks and cases agree about which cite which.
#include "webhook/core/case_library.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "policies/checks.h"
#include "tests/webhook/test_util.h"
#include "webhook/core/errors.h"

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

bool is_https_url(const std::string& url) {
  return url.rfind("https://", 0) == 0 && url.size() > std::string("https://x.y").size() &&
         url.find(' ') == std::string::npos;
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

TEST(CaseLibrary, EveryCheckRestsOnAtLeastTwoCases) {
  for (const auto& check : check_registry()) {
    EXPECT_GE(check.cases.size(), 2u) << "check " << check.id << " rests on fewer than two cases";
  }
}

TEST(CaseLibrary, EveryKeyFigureHasItsOwnHttpsUrl) {
  for (const Case& c : case_library().cases()) {
    for (const auto& figure : c.key_figures) {
      EXPECT_TRUE(is_https_url(figure.source)) << c.id << ": \"" << figure.text << "\" cites " << figure.source;
    }
  }
}

TEST(CaseLibrary, TheCaseAWarningPrintsRestsOnAPrimarySource) {
  // Only the first case of a check is printed in its warnings: it must not rest on press
  // reports alone.
  for (const auto& check : check_registry()) {
    const Case* c = case_library().find(check.cases.front());
    ASSERT_NE(c, nullptr) << check.id;
    EXPECT_TRUE(std::any_of(c->key_figures.begin(), c->key_figures.end(), [](const auto& f) { return !f.secondary; }))
        << check.id << " prints " << c->id << ", whose figures are all secondary";
  }
}

TEST(CaseLibrary, WarningsPrintTheCasesTheEvidenceAuditChose) {
  // ../shared/cases/AUDIT.md: AWS Sydney (a single-AZ event with a first-party
  // post-mortem) leads zone-spread; the cases it found unrelated to a check stay off it.
  EXPECT_EQ(find_check("zone-spread")->cases.front(), "aws-sydney-power-2016");
  EXPECT_EQ(find_check("gpu-health-tolerations")->cases.front(), "bloom-176b-training-2022");
  for (const char* unrelated : {"acme-llm-pretraining-2023", "osm-amsterdam-power-2022"}) {
    EXPECT_FALSE(contains(find_check("disruption-budget")->cases, unrelated))
        << unrelated << " involves no voluntary disruption";
  }
}

TEST(CaseLibrary, EveryCheckACaseBacksSaysWhyInOneLine) {
  for (const Case& c : case_library().cases()) {
    for (const auto& check : c.checks) {
      EXPECT_FALSE(check.why.empty()) << c.id << " " << check.id;
      EXPECT_LE(check.why.size(), 160u) << c.id << " " << check.id << ": one line, please";
      EXPECT_EQ(check.why.find('\n'), std::string::npos) << c.id << " " << check.id;
    }
  }
}

TEST(CaseLibrary, EveryFileInTheCasesDirectoryIsCompiledIn) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KUBEGAP_SOURCE_DIR) + "/cases")) {
    if (entry.path().extension() == ".yaml") on_disk.insert("cases/" + entry.path().filename().string());
  }
  std::set<std::string> embedded;
  for (const auto& file : embedded_case_files()) embedded.insert(file.name);
  EXPECT_EQ(on_disk, embedded) << "list every case file in CMakeLists.txt (kubegap_case_paths)";
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
      const bool listed =
          std::any_of(c.sources.begin(), c.sources.end(), [&](const auto& s) { return s.url == figure.source; });
      EXPECT_TRUE(listed) << c.id << ": key figure \"" << figure.text << "\" cites " << figure.source
                          << ", which is not among the case's sources";
    }
  }
}

TEST(CaseLibrary, CasesNameOnlyKnownChecks) {
  for (const Case& c : case_library().cases()) {
    EXPECT_FALSE(c.checks.empty()) << c.id;
    for (const auto& check : c.checks) {
      EXPECT_NE(find_check(check.id), nullptr) << c.id << " names unknown check " << check.id;
    }
  }
}

TEST(CaseLibrary, ACheckCitingACaseIsListedByThatCase) {
  for (const auto& check : check_registry()) {
    for (const auto& id : check.cases) {
      const Case* c = case_library().find(id);
      if (c == nullptr) continue;  // reported by EveryCaseCitedByACheckExists
      EXPECT_NE(c->backs(check.id), nullptr)
          << "check " << check.id << " cites " << id << ", but that case's `checks` omits it";
    }
  }
}

TEST(CaseLibrary, ACaseListingACheckIsCitedByThatCheck) {
  for (const Case& c : case_library().cases()) {
    for (const auto& backed : c.checks) {
      const auto* check = find_check(backed.id);
      if (check == nullptr) continue;  // reported by CasesNameOnlyKnownChecks
      EXPECT_TRUE(contains(check->cases, c.id))
          << "case " << c.id << " lists check " << backed.id << ", but that check does not cite it";
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

TEST(CaseLibrary, CasesAsJsonListsEveryCheckWithItsCasesAndEveryCase) {
  const auto doc = parse_json(kubegap::cases_as_json(case_library()));
  ASSERT_TRUE(doc.IsObject());
  ASSERT_NE(member(doc, "checks"), nullptr);
  ASSERT_EQ(doc["checks"].Size(), check_registry().size());
  for (rapidjson::SizeType i = 0; i < doc["checks"].Size(); ++i) {
    const auto& item = doc["checks"][i];
    const auto& check = check_registry()[i];
    EXPECT_EQ(str(item["id"]), check.id);
    EXPECT_EQ(str(item["remedy"]), check.remedy);
    ASSERT_EQ(item["cases"].Size(), check.cases.size());
    for (rapidjson::SizeType k = 0; k < item["cases"].Size(); ++k) {
      EXPECT_EQ(str(item["cases"][k]["id"]), check.cases[k]) << "in the order the check cites them";
      EXPECT_EQ(str(item["cases"][k]["why"]), case_library().find(check.cases[k])->backs(check.id)->why);
    }
  }
  const auto& cases = doc["cases"];
  ASSERT_EQ(cases.Size(), case_library().cases().size());
  for (rapidjson::SizeType i = 0; i < cases.Size(); ++i) {
    const auto& item = cases[i];
    const Case& c = case_library().cases()[i];
    EXPECT_EQ(str(item["id"]), c.id);
    EXPECT_EQ(str(item["title"]), c.title);
    ASSERT_EQ(item["key_figures"].Size(), c.key_figures.size());
    for (rapidjson::SizeType k = 0; k < c.key_figures.size(); ++k) {
      EXPECT_EQ(str(item["key_figures"][k]["source"]), c.key_figures[k].source);
      EXPECT_EQ(item["key_figures"][k]["secondary"].GetBool(), c.key_figures[k].secondary);
    }
    ASSERT_EQ(item["checks"].Size(), c.checks.size());
    ASSERT_EQ(item["sources"].Size(), c.sources.size());
  }
}

TEST(CaseLibrary, CasesAsJsonForOneCheckHasOnlyItAndItsCases) {
  const auto doc = parse_json(kubegap::cases_as_json(case_library(), "zone-spread"));
  ASSERT_EQ(doc["checks"].Size(), 1u);
  EXPECT_EQ(str(doc["checks"][0]["id"]), "zone-spread");
  EXPECT_EQ(doc["cases"].Size(), find_check("zone-spread")->cases.size());
}

TEST(CaseLibrary, CasesByCheckTextGivesEachCheckItsFixAndItsCasesInOrderWithWhy) {
  const std::string text = kubegap::cases_by_check_text(case_library());
  std::size_t at = 0;
  for (const auto& check : check_registry()) {
    at = text.find(std::string(check.id) + ": " + std::string(check.summary), at);
    ASSERT_NE(at, std::string::npos) << check.id;
    ASSERT_NE(text.find("fix: ", at), std::string::npos) << check.id;
    for (const auto& id : check.cases) {
      at = text.find("  " + id + "\n", at);
      ASSERT_NE(at, std::string::npos) << check.id << " " << id << " (in the check's order)";
      const std::string why = case_library().find(id)->backs(check.id)->why;
      EXPECT_NE(text.find(why.substr(0, 30), at), std::string::npos) << id;
    }
  }
  const std::string one = kubegap::cases_by_check_text(case_library(), "zone-spread");
  EXPECT_EQ(one.rfind("zone-spread: ", 0), 0u) << one;
  EXPECT_EQ(one.find("checkpoint-volume"), std::string::npos) << one;
}

TEST(CaseLibrary, CaseAsTextKeepsWhatTheSourcesSayApartFromOurReading) {
  for (const Case& c : case_library().cases()) {
    const std::string text = kubegap::case_as_text(c);
    const auto said = text.find("What the sources say:");
    const auto reading = text.find("Our reading:");
    ASSERT_NE(said, std::string::npos) << c.id;
    ASSERT_NE(reading, std::string::npos) << c.id;
    EXPECT_LT(said, reading) << c.id;
    for (const auto& f : c.key_figures) {
      const auto where = text.find(f.source, said);
      EXPECT_TRUE(where != std::string::npos && where < reading) << c.id << ": " << f.source;
    }
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
checks:
  - id: "zone-spread"
    why: "W"
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
  ASSERT_EQ(c.checks.size(), 1u);
  EXPECT_EQ(c.checks[0].id, "zone-spread");
  EXPECT_EQ(c.checks[0].why, "W");
  EXPECT_NE(c.backs("zone-spread"), nullptr);
  EXPECT_EQ(c.backs("checkpoint-volume"), nullptr);
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
    EXPECT_EQ(message.rfind("cases/x-2024.yaml:16: severity: unknown key", 0), 0u) << message;
  }
}

TEST(ParseCase, RejectsEveryMissingKeyNamingTheSourceAndKey) {
  for (const char* key :
       {"id", "title", "date", "organisation", "summary", "key_figures", "lessons", "checks", "sources"}) {
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

TEST(ParseCase, RejectsACheckWithoutAWhy) {
  for (const char* checks : {"checks: [\"zone-spread\"]\n", "checks:\n  - id: \"zone-spread\"\n"}) {
    std::string text = kMinimalCase;
    const auto from = text.find("checks:");
    const auto to = text.find("sources:");
    text.replace(from, to - from, checks);
    EXPECT_THROW(parse_case(text, "cases/x.yaml"), ConfigError) << checks;
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
