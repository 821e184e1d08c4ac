#include "webhook/report/report_render.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <sstream>
#include <unordered_map>

#include "policies/checks.h"
#include "policies/text.h"
#include "webhook/core/build_info.h"
#include "webhook/core/case_library.h"

namespace kubegap {
namespace {

// where: "file:line"; the file alone for line 0 (an object read from the API server by `scan`).
std::string where(const std::string& file, int line) { return line > 0 ? file + ":" + std::to_string(line) : file; }

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kFinding:
      return "finding";
    case Outcome::kExempt:
      return "exempt";
    case Outcome::kNotEvaluated:
      return "not-evaluated";
    case Outcome::kNote:
      return "note";
  }
  return "finding";
}

// without_remedy: the finding as a warning states it, when the fix is printed apart.
Finding without_remedy(Finding f) {
  f.remedy.clear();
  return f;
}

std::string first_source(const std::string& case_id) {
  const Case* c = case_library().find(case_id);
  return c != nullptr && !c->sources.empty() ? c->sources.front().url : std::string();
}

std::string object_title(const CheckedObject& o) {
  const std::string ns = o.namespace_name.empty() ? "" : o.namespace_name + "/";
  return o.kind + " " + ns + (o.name.empty() ? "(unnamed)" : o.name);
}

template <typename Writer>
void write(Writer& w, std::string_view text) {
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

// write_origin: where an object came from and its type (checked or skipped alike).
template <typename Writer, typename Object>
void write_origin(Writer& w, const Object& o) {
  w.Key("file");
  write(w, o.file);
  w.Key("line");
  w.Int(o.line);
  w.Key("apiVersion");
  write(w, o.api_version);
  w.Key("kind");
  write(w, o.kind);
}

// write_locations: SARIF `locations` holding the one physicalLocation file:line (the
// region only when there is a line: 0 stands for the whole file).
template <typename Writer>
void write_locations(Writer& w, const std::string& file, int line) {
  w.Key("locations");
  w.StartArray();
  w.StartObject();
  w.Key("physicalLocation");
  w.StartObject();
  w.Key("artifactLocation");
  w.StartObject();
  w.Key("uri");
  write(w, file);
  w.EndObject();
  if (line > 0) {
    w.Key("region");
    w.StartObject();
    w.Key("startLine");
    w.Int(line);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.EndArray();
}

// write_notification: a SARIF toolExecutionNotification (an input error or a note).
template <typename Writer>
void write_notification(Writer& w, const char* level, const std::string& text, const std::string& file, int line) {
  w.StartObject();
  w.Key("level");
  write(w, level);
  w.Key("message");
  w.StartObject();
  w.Key("text");
  write(w, text);
  w.EndObject();
  if (!file.empty()) write_locations(w, file, line);
  w.EndObject();
}

// write_invocation: SARIF's record of the run: executionSuccessful is false when an input
// could not be read (the results then cover only the rest), each such error a
// notification at its file and line, each note (a skipped file) one too.
template <typename Writer>
void write_invocation(Writer& w, const CheckReport& report) {
  w.Key("invocations");
  w.StartArray();
  w.StartObject();
  w.Key("executionSuccessful");
  w.Bool(report.errors.empty());
  w.Key("toolExecutionNotifications");
  w.StartArray();
  for (const auto& e : report.errors) write_notification(w, "error", e.message, e.file, e.line);
  for (const auto& note : report.notes) write_notification(w, "note", note, "", 0);
  w.EndArray();
  w.EndObject();
  w.EndArray();
}

// Paint: ANSI colour around a piece of text, or the text alone.
struct Paint {
  bool on = false;
  std::string operator()(std::string_view code, std::string_view text) const {
    if (!on) return std::string(text);
    return "\033[" + std::string(code) + "m" + std::string(text) + "\033[0m";
  }
};
constexpr std::string_view kBold = "1", kDim = "2", kGreen = "32", kYellow = "1;33";

// skipped_summary: "Service (3), ConfigMap (1)": each skipped kind once, with its count,
// in the order first met.
std::string skipped_summary(const std::vector<SkippedObject>& skipped) {
  std::vector<std::pair<std::string, std::size_t>> kinds;
  for (const auto& s : skipped) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == s.kind; });
    if (it == kinds.end()) {
      kinds.emplace_back(s.kind, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [kind, count] : kinds) {
    out += (out.empty() ? "" : ", ") + kind + " (" + std::to_string(count) + ")";
  }
  return out;
}

}  // namespace

std::string render_text(const CheckReport& report, const TextOptions& options) {
  const Paint paint{options.colour};
  std::ostringstream out;
  for (const auto& o : report.objects) {
    out << paint(kBold, object_title(o)) << " (" << where(o.file, o.line) << ")\n";
    if (options.explain) {
      for (const auto& p : o.parts) {
        out << "  class " << (p.part.empty() ? "" : p.part + ": ")
            << (p.evaluated ? std::string(class_name(p.workload_class)) : "not evaluated") << " (" << p.why
            << (p.coordinator ? "; coordinator: judged with its job" : "") << ")\n";
      }
      for (const auto& line : o.provenance) out << "  from " << line << "\n";
    }
    if (std::none_of(o.findings.begin(), o.findings.end(), [](const Finding& f) { return warns(f); })) {
      out << "  " << paint(kGreen, "no findings") << "\n";
    }
    for (const auto& f : o.findings) {
      if (f.outcome == Outcome::kFinding && f.audit_only) {
        out << "  " << paint(kDim, std::string(f.check) + ": (audit only) " + format_annotation(f)) << "\n";
        continue;
      }
      if (f.outcome != Outcome::kFinding) {
        out << "  " << paint(kDim, std::string(f.check) + ": " + format_annotation(f)) << "\n";
        continue;
      }
      std::string warning = format_warning(without_remedy(f));
      warning = warning.substr(warning.find(": ") + 2);  // the check id is printed in front
      out << "  " << paint(kYellow, f.check) << ": " << warning << "\n";
      if (!f.remedy.empty()) out << "    fix: " << sanitize_text(f.remedy) << "\n";
      out << "    cases:";
      for (const auto& id : f.cases) out << " " << id;
      if (!f.cases.empty()) out << "\n    see: " << first_source(f.cases.front());
      out << "\n";
    }
  }
  // A directory of manifests holds many objects we do not evaluate (Services,
  // ConfigMaps, ...): one line says so, unless they are asked for one by one.
  if (options.show_skipped) {
    for (const auto& s : report.skipped) {
      out << "skipped " << s.kind << " " << s.name << " (" << where(s.file, s.line)
          << "): not a kind kubegap evaluates\n";
    }
  } else if (!report.skipped.empty()) {
    out << paint(kDim, "skipped " + std::to_string(report.skipped.size()) +
                           " object(s) of kinds kubegap does not evaluate: " + skipped_summary(report.skipped) +
                           " (--show-skipped lists them)")
        << "\n";
  }
  for (const auto& note : report.notes) out << "note: " << note << "\n";
  std::ostringstream summary;
  summary << report.objects.size() << " object(s) checked, " << report.finding_count() << " finding(s)";
  if (!report.errors.empty()) summary << ", " << report.errors.size() << " input error(s) (listed on stderr)";
  if (!report.live_view && report.budgets + report.nodes == 0) {
    summary << "; disruption-budget not evaluated (no PodDisruptionBudgets or Nodes in the input)";
  }
  out << paint(kBold, summary.str()) << "\n";
  return out.str();
}

// write_json_finding: one finding of an object in the JSON report.
template <typename Writer, typename F>
void write_json_finding(Writer& w, const F& f) {
  w.StartObject();
  w.Key("check");
  write(w, f.check);
  w.Key("outcome");
  write(w, outcome_name(f.outcome));
  w.Key("message");
  write(w, warns(f) ? format_warning(f) : std::string());
  w.Key("action");
  write(w, f.audit_only ? "audit" : "warn");
  w.Key("reason");
  write(w, format_annotation(f));
  w.Key("remedy");
  write(w, sanitize_text(f.remedy));
  w.Key("parts");
  w.StartArray();
  for (const auto& p : f.parts) write(w, p);
  w.EndArray();
  w.Key("cases");
  w.StartArray();
  for (const auto& id : f.cases) {
    w.StartObject();
    w.Key("id");
    write(w, id);
    w.Key("url");
    write(w, first_source(id));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// write_cut_summary: the summary's members for a report that may be cut: how many objects
// have findings, and the findings by check (of every object, shown or not).
template <typename Writer>
void write_cut_summary(Writer& w, const CheckReport& report) {
  std::map<std::string, std::uint64_t> by_check;
  std::uint64_t with_findings = 0;
  for (const auto& o : report.objects) {
    bool any = false;
    for (const auto& f : o.findings) {
      if (f.outcome != Outcome::kFinding) continue;
      ++by_check[std::string(f.check)];
      any = true;
    }
    with_findings += any ? 1 : 0;
  }
  w.Key("objectsWithFindings");
  w.Uint64(with_findings);
  w.Key("byCheck");
  w.StartObject();
  for (const auto& [check, n] : by_check) {
    w.Key(check.c_str());
    w.Uint64(n);
  }
  w.EndObject();
}

// write_report_json: the JSON report, pretty or compact by the writer; the first `limit`
// objects, and with `cut_summary` what the cut left out.
template <typename Writer>
void write_report_json(Writer& w, const CheckReport& report, std::size_t limit, bool cut_summary) {
  const std::size_t shown = limit;
  w.StartObject();
  w.Key("apiVersion");
  write(w, "kubegap.io/v1alpha1");
  w.Key("kind");
  write(w, "CheckReport");
  w.Key("version");
  write(w, kVersion);
  w.Key("objects");
  w.StartArray();
  for (const auto& o : report.objects) {
    if (limit-- == 0) break;
    w.StartObject();
    write_origin(w, o);
    w.Key("namespace");
    write(w, o.namespace_name);
    w.Key("name");
    write(w, o.name);
    w.Key("classes");  // how each part was judged, and why (as `check --explain`)
    w.StartArray();
    for (const auto& p : o.parts) {
      w.StartObject();
      w.Key("part");
      write(w, p.part);
      w.Key("class");
      write(w, p.evaluated ? class_name(p.workload_class) : std::string_view("not-evaluated"));
      w.Key("coordinator");
      w.Bool(p.coordinator);
      w.Key("why");
      write(w, p.why);
      w.EndObject();
    }
    w.EndArray();
    w.Key("findings");
    w.StartArray();
    for (const auto& f : o.findings) write_json_finding(w, f);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("skipped");
  w.StartArray();
  for (const auto& s : report.skipped) {
    w.StartObject();
    write_origin(w, s);
    w.Key("name");
    write(w, s.name);
    w.EndObject();
  }
  w.EndArray();
  w.Key("errors");
  w.StartArray();
  for (const auto& e : report.errors) {
    w.StartObject();
    w.Key("file");
    write(w, e.file);
    w.Key("line");
    w.Int(e.line);
    w.Key("message");
    write(w, e.message);
    w.EndObject();
  }
  w.EndArray();
  w.Key("notes");
  w.StartArray();
  for (const auto& note : report.notes) write(w, note);
  w.EndArray();
  w.Key("summary");
  w.StartObject();
  w.Key("objects");
  w.Uint64(report.objects.size());
  w.Key("findings");
  w.Uint64(report.finding_count());
  w.Key("errors");
  w.Uint64(report.errors.size());
  w.Key("podDisruptionBudgets");
  w.Uint64(report.budgets);
  w.Key("nodes");
  w.Uint64(report.nodes);
  if (cut_summary) write_cut_summary(w, report);
  w.EndObject();
  if (cut_summary) {
    w.Key("omittedObjects");
    w.Uint64(report.objects.size() - std::min(report.objects.size(), shown));
  }
  w.EndObject();
}

std::string render_json(const CheckReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  write_report_json(w, report, report.objects.size(), false);
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string render_json_compact(const CheckReport& report, std::size_t limit) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  write_report_json(w, report, limit, true);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string render_sarif(const CheckReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("$schema");
  write(w, "https://json.schemastore.org/sarif-2.1.0.json");
  w.Key("version");
  write(w, "2.1.0");
  w.Key("runs");
  w.StartArray();
  w.StartObject();
  w.Key("tool");
  w.StartObject();
  w.Key("driver");
  w.StartObject();
  w.Key("name");
  write(w, "kubegap");
  w.Key("version");
  write(w, kVersion);
  w.Key("rules");
  w.StartArray();
  for (const auto& check : check_registry()) {
    w.StartObject();
    w.Key("id");
    write(w, check.id);
    w.Key("shortDescription");
    w.StartObject();
    w.Key("text");
    write(w, check.summary);
    w.EndObject();
    w.Key("help");
    w.StartObject();
    w.Key("text");
    write(w, "Fix: " + std::string(check.remedy));
    w.EndObject();
    w.Key("helpUri");
    write(w, first_source(check.cases.front()));
    w.Key("defaultConfiguration");
    w.StartObject();
    w.Key("level");
    write(w, "warning");
    w.EndObject();
    w.Key("properties");
    w.StartObject();
    w.Key("cases");
    w.StartArray();
    for (const auto& id : check.cases) write(w, id);
    w.EndArray();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.Key("results");
  w.StartArray();
  for (const auto& o : report.objects) {
    for (const auto& f : o.findings) {
      if (f.outcome == Outcome::kNotEvaluated || f.outcome == Outcome::kNote) continue;
      w.StartObject();
      w.Key("ruleId");
      write(w, f.check);
      // A check whose policy action is `audit` is reported, but as a note.
      w.Key("level");
      write(w, f.audit_only ? "note" : "warning");
      w.Key("message");
      w.StartObject();
      // The statement, then this finding's own fix (the rule's help has the general one).
      std::string text = object_title(o) + ": " + (warns(f) ? format_warning(without_remedy(f)) : format_annotation(f));
      if (warns(f) && !f.remedy.empty()) text += ". Fix: " + sanitize_text(f.remedy);
      w.Key("text");
      write(w, text);
      w.EndObject();
      write_locations(w, o.file, o.line);
      if (f.outcome == Outcome::kExempt) {  // kubegap.io/exempt: shown as suppressed
        w.Key("suppressions");
        w.StartArray();
        w.StartObject();
        w.Key("kind");
        write(w, "inSource");
        w.Key("justification");
        write(w, f.reason);
        w.EndObject();
        w.EndArray();
      }
      w.EndObject();
    }
  }
  w.EndArray();
  write_invocation(w, report);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace kubegap
