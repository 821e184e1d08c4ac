#pragma once
// The one loader of "a file of Kubernetes objects" that `check` and `--cluster-state`
// share: every object of a YAML or JSON text, Lists expanded, a captured AdmissionReview
// standing for its object, each with the file and line it came from.
//
//   LoadedObjects loaded;
//   load_objects(read_file(path), path, loaded);   // never throws on the file's content
//   for (const auto& o : loaded.objects) { ... o.kind, *o.json, o.field_line(error, root) ... }
//   for (const auto& p : loaded.problems) std::cerr << p.text() << "\n";

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/core/errors.h"
#include "webhook/core/yaml_json.h"

namespace kubegap {

// KubeObject: one Kubernetes object of an input, with where it was found. Lists are
// expanded into their items; an AdmissionReview stands for its request.object.
struct KubeObject {
  std::string file;
  int line = 0;
  // From the object, or implied by its typed `<Kind>List` (the API server's lists leave
  // them off their items). Empty when neither says: the caller decides whether that is
  // an error.
  std::string api_version, kind;
  std::shared_ptr<const YamlDocument> document;  // keeps `json` alive
  const rapidjson::Value* json = nullptr;
  std::string path;  // of the object in its document: "", "items[2]", "request.object"

  // field_line: the line of the field that a decoder's `error` names, its path rendered
  // under the root name `root` ("Pod.spec.containers: expected an array", root "Pod");
  // the object's own line when the field cannot be found.
  int field_line(std::string_view error, std::string_view root) const;
};

struct LoadedObjects {
  std::vector<KubeObject> objects;
  std::vector<InputProblem> problems;  // in input order
};

// load_objects: every object of a YAML or JSON text, appended to `out`. A problem (invalid
// YAML, a document that is not a mapping, a List whose items are not a list, ...) costs
// only the document it is in: each `---` document is parsed on its own, so the objects of
// the others are still read. Never throws on the text.
void load_objects(std::string_view text, const std::string& file, LoadedObjects& out);

}  // namespace kubegap
