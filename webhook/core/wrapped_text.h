#pragma once
// Objects kept as text inside another object: Katib v1alpha3 Experiments hold their trial
// Job as Go template text (`spec.trialTemplate.goTemplate.rawTemplate`), and both Katib
// versions may keep it in a ConfigMap (`trialTemplate.configMap`, `goTemplate.templateSpec`)
// instead. The text is parsed into a document the pod template locator walks like any
// wrapped object.
//
//   WrappedText parsed = parse_wrapped_text(text, TextSyntax::kGoTemplate);
//   if (parsed.error.empty()) ... parsed.document ...

#include <rapidjson/document.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace kubegap {

// kTemplateValue: what a Go template action that stands for a value becomes: a
// deploy-time placeholder, read like an envsubst `${VAR}` (a quantity `${template}`
// counts as requested; a save path `/out/${template}` is a path set when it is rendered).
inline constexpr std::string_view kTemplateValue = "${template}";

enum class TextSyntax {
  kYaml,        // YAML (or JSON) text
  kGoTemplate,  // YAML with Go template actions ({{.Trial}}, {{- range .}} ... {{- end}})
};

// neutralize_go_template: Go template text as YAML a parser reads. Actions that steer
// (`if`, `else`, `range`, `with`, `end`, `define`, `template`, `block`, `break`,
// `continue`, comments, `$x := ...`) are taken out; actions that print a value become
// kTemplateValue. A line that held actions and is left blank (or with only a `# comment`)
// is dropped: what a range repeats is read once, and every branch of an `if` is read. An
// action may span lines (its lines stay, empty); one left open runs to the end.
std::string neutralize_go_template(std::string_view text);

// kMaxWrappedTextBytes: the most text read for one object, all its wrapped texts together
// (JsonReader::draw_text). A YAML parser keeps a few hundred bytes per node, and this text
// arrives in an admission request, outside the memory budget that charges the request's
// own decode: a 3 MiB template of tiny nodes could take the webhook past its memory.
// Katib's trial templates are a few KiB. Aliases may not multiply a text: its node budget
// is a node for each of its bytes, and a string costs a node per 16 of its bytes.
inline constexpr std::size_t kMaxWrappedTextBytes = 64 * 1024;

struct WrappedText {
  rapidjson::Document document;  // the one object the text holds
  std::string error;             // why there is none: a syntax error, not one object
};

// parse_wrapped_text: the single object `text` holds. A text over kMaxWrappedTextBytes is
// not read (an error saying so); aliases are bounded as in every YAML text (the node
// budget of webhook/core/yaml_json.h).
WrappedText parse_wrapped_text(std::string_view text, TextSyntax syntax);

}  // namespace kubegap
