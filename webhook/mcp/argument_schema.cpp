#include "webhook/mcp/argument_schema.h"

#include <cmath>
#include <string_view>

#include "webhook/mcp/json_rpc.h"

namespace kubegap {
namespace {

std::string_view string_of(const rapidjson::Value& schema, const char* key) {
  const auto found = schema.FindMember(key);
  return found != schema.MemberEnd() && found->value.IsString() ? std::string_view(found->value.GetString())
                                                                : std::string_view();
}

bool has_type(const rapidjson::Value& value, std::string_view type) {
  if (type == "object") return value.IsObject();
  if (type == "array") return value.IsArray();
  if (type == "string") return value.IsString();
  if (type == "boolean") return value.IsBool();
  // JSON Schema: an integer is a number without a fractional part (10.0 is one).
  if (type == "integer")
    return value.IsInt64() || value.IsUint64() ||
           (value.IsDouble() && value.GetDouble() == std::floor(value.GetDouble()));
  if (type == "number") return value.IsNumber();
  return true;  // no type: anything
}

std::string type_name(const rapidjson::Value& value) {
  if (value.IsObject()) return "an object";
  if (value.IsArray()) return "an array";
  if (value.IsString()) return "a string";
  if (value.IsBool()) return "a boolean";
  if (value.IsNumber()) return "a number";
  return "null";
}

// A few enum values are enough to correct a call; the schema lists them all.
std::string some_of(const rapidjson::Value& values) {
  std::string out;
  rapidjson::SizeType shown = 0;
  for (const auto& v : values.GetArray()) {
    if (shown == 12) {
      out += ", ... (" + std::to_string(values.Size()) + " in all: see the tool's inputSchema)";
      break;
    }
    out += (shown++ == 0 ? "" : ", ") + to_json(v);
  }
  return out;
}

std::optional<ArgumentError> fail(const std::string& field, const std::string& what) {
  return ArgumentError{field, "arguments" + (field.empty() ? std::string() : "." + field) + ": " + what};
}

std::optional<ArgumentError> check(const rapidjson::Value& value, const rapidjson::Value& schema,
                                   const std::string& field);

std::optional<ArgumentError> check_object(const rapidjson::Value& value, const rapidjson::Value& schema,
                                          const std::string& field) {
  const auto properties = schema.FindMember("properties");
  const std::string prefix = field.empty() ? std::string() : field + ".";
  if (const auto required = schema.FindMember("required");
      required != schema.MemberEnd() && required->value.IsArray()) {
    for (const auto& name : required->value.GetArray()) {
      if (name.IsString() && !value.HasMember(name)) return fail(prefix + name.GetString(), "required");
    }
  }
  const auto additional = schema.FindMember("additionalProperties");
  const bool closed = additional != schema.MemberEnd() && additional->value.IsFalse();
  for (const auto& member : value.GetObject()) {
    const std::string name = prefix + std::string(member.name.GetString(), member.name.GetStringLength());
    const rapidjson::Value* sub = nullptr;
    if (properties != schema.MemberEnd() && properties->value.IsObject()) {
      if (const auto found = properties->value.FindMember(member.name); found != properties->value.MemberEnd()) {
        sub = &found->value;
      }
    }
    if (sub == nullptr) {
      if (closed) return fail(name, "unknown argument (see the tool's inputSchema)");
      continue;
    }
    if (auto wrong = check(member.value, *sub, name)) return wrong;
  }
  return std::nullopt;
}

std::optional<ArgumentError> check(const rapidjson::Value& value, const rapidjson::Value& schema,
                                   const std::string& field) {
  const std::string_view type = string_of(schema, "type");
  if (!has_type(value, type)) return fail(field, "must be " + std::string(type) + ", not " + type_name(value));
  if (const auto values = schema.FindMember("enum"); values != schema.MemberEnd() && values->value.IsArray()) {
    bool found = false;
    for (const auto& v : values->value.GetArray()) found = found || v == value;
    if (!found) return fail(field, to_json(value) + " is not one of " + some_of(values->value));
  }
  if (value.IsNumber() && type == "integer") {
    const double n = value.GetDouble();
    if (const auto min = schema.FindMember("minimum");
        min != schema.MemberEnd() && min->value.IsNumber() && n < min->value.GetDouble()) {
      return fail(field, "must be at least " + std::to_string(min->value.GetInt64()));
    }
    if (const auto max = schema.FindMember("maximum");
        max != schema.MemberEnd() && max->value.IsNumber() && n > max->value.GetDouble()) {
      return fail(field, "must be at most " + std::to_string(max->value.GetInt64()));
    }
  }
  if (value.IsString()) {
    if (const auto max = schema.FindMember("maxLength");
        max != schema.MemberEnd() && max->value.IsUint64() && value.GetStringLength() > max->value.GetUint64()) {
      return fail(field, "longer than " + std::to_string(max->value.GetUint64()) + " characters");
    }
  }
  if (value.IsArray()) {
    if (const auto min = schema.FindMember("minItems");
        min != schema.MemberEnd() && min->value.IsUint64() && value.Size() < min->value.GetUint64()) {
      return fail(field, "needs at least " + std::to_string(min->value.GetUint64()) + " item(s)");
    }
    if (const auto items = schema.FindMember("items"); items != schema.MemberEnd() && items->value.IsObject()) {
      for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
        if (auto wrong = check(value[i], items->value, field + "[" + std::to_string(i) + "]")) return wrong;
      }
    }
  }
  if (value.IsObject()) return check_object(value, schema, field);
  return std::nullopt;
}

}  // namespace

std::optional<ArgumentError> check_arguments(const rapidjson::Value& arguments, const rapidjson::Value& schema) {
  return check(arguments, schema, "");
}

}  // namespace kubegap
