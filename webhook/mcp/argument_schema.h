#pragma once
// The arguments of a tool call against the tool's inputSchema: the JSON Schema subset the
// tools use (type object, string, integer, boolean, array; properties, required,
// additionalProperties: false, enum, minimum, maximum, items, minItems, maxLength). The
// first violation is named by its field, so an agent can correct the call (-32602).
//
//   if (auto wrong = check_arguments(arguments, schema)) return invalid_params(*wrong);

#include <rapidjson/document.h>

#include <optional>
#include <string>

namespace kubegap {

struct ArgumentError {
  std::string field;    // "kinds[1]", "id"; empty: the arguments object itself
  std::string message;  // "arguments.kinds[1]: \"Foo\" is not one of ..."
};

// check_arguments: nullopt when `arguments` satisfies `schema`.
std::optional<ArgumentError> check_arguments(const rapidjson::Value& arguments, const rapidjson::Value& schema);

}  // namespace kubegap
