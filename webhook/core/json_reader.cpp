#include "webhook/core/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace kubegap {

std::string JsonPath::render() const {
  std::vector<const JsonPath*> chain;
  for (const JsonPath* p = this; p != nullptr; p = p->parent) chain.push_back(p);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const JsonPath& p = **it;
    if (p.index != kNoIndex) {
      // Appended piece by piece: GCC 12 misreports "[" + std::string under -Wrestrict.
      out += '[';
      out += std::to_string(p.index);
      out += ']';
    } else if (!p.name.empty()) {
      if (!out.empty()) out += '.';
      out += p.name;
    }
  }
  return out;
}

void JsonReader::fail(const JsonPath& path, std::string_view what) {
  if (error_.empty()) error_ = path.render() + ": " + std::string(what);
}

std::string JsonReader::string_member(const rapidjson::Value* object, std::string_view name) {
  const rapidjson::Value* v = member(object, name);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

const rapidjson::Value* JsonReader::member(const rapidjson::Value* object, std::string_view name) {
  if (object == nullptr || !object->IsObject()) return nullptr;
  // The first member of that name, as FindMember finds it, but its length and first byte
  // are compared before its bytes: the decoders look up some fifteen names in each
  // container of every review, and FindMember compares every member through memcmp.
  for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
    if (it->name.GetStringLength() != name.size()) continue;
    const char* const key = it->name.GetString();
    if (name.empty() || (key[0] == name[0] && std::memcmp(key, name.data(), name.size()) == 0)) {
      return it->value.IsNull() ? nullptr : &it->value;
    }
  }
  return nullptr;
}

const rapidjson::Value* JsonReader::object(const rapidjson::Value* value, const JsonPath& path) {
  if (value == nullptr || value->IsNull()) return nullptr;
  if (!value->IsObject()) {
    fail(path, "expected an object");
    return nullptr;
  }
  return value;
}

std::string JsonReader::string(const rapidjson::Value* value, const JsonPath& path) {
  return std::string(string_view(value, path));
}

std::string_view JsonReader::string_view(const rapidjson::Value* value, const JsonPath& path) {
  if (value == nullptr) return {};
  if (!value->IsString()) {
    fail(path, "expected a string");
    return {};
  }
  return {value->GetString(), value->GetStringLength()};
}

bool JsonReader::boolean(const rapidjson::Value* value, const JsonPath& path) {
  if (value == nullptr) return false;
  if (!value->IsBool()) {
    fail(path, "expected a boolean");
    return false;
  }
  return value->GetBool();
}

bool is_placeholder(std::string_view text) {
  if (text.size() < 2 || text.front() != '$') return false;
  std::string_view name = text.substr(1);
  const bool braced = name.front() == '{';  // ${NAME}, also Katib's ${trialParameters.x}
  if (braced) {
    if (name.size() < 3 || name.back() != '}') return false;
    name = name.substr(1, name.size() - 2);
  }
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())) &&
         std::all_of(name.begin(), name.end(), [&](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (braced && c == '.');
         });
}

std::optional<std::int64_t> JsonReader::int64(const rapidjson::Value* value, const JsonPath& path) {
  if (value == nullptr) return std::nullopt;
  if (value->IsString() && is_placeholder({value->GetString(), value->GetStringLength()})) {
    // An envsubst template's `numNodes: ${NODES}`: set at deploy time, read as absent.
    note(path.render() + " is " + std::string(value->GetString(), value->GetStringLength()) +
         " (a placeholder, read as unset)");
    return std::nullopt;
  }
  if (!value->IsInt64()) {
    fail(path, "expected an integer");
    return std::nullopt;
  }
  return value->GetInt64();
}

void JsonReader::string_map(const rapidjson::Value* value, const JsonPath& path, StringMap& out) {
  const rapidjson::Value* map = object(value, path);
  if (map == nullptr) return;
  for (const auto& entry : map->GetObject()) {
    const std::string_view key(entry.name.GetString(), entry.name.GetStringLength());
    out.insert_or_assign(std::string(key), string(&entry.value, JsonPath{&path, key}));
    if (!ok()) return;
  }
}

std::vector<std::string> JsonReader::string_list(const rapidjson::Value* value, const JsonPath& path) {
  std::vector<std::string> out;
  each(value, path, [&](const rapidjson::Value& v, const JsonPath& p) { out.push_back(string(&v, p)); });
  return out;
}

}  // namespace kubegap
