#pragma once
// JsonReader: type-checked reads from untrusted RapidJSON values. Every read checks the
// member's type first; the first mismatch is recorded with its JSON path and later reads
// return defaults, so decoding never throws and never reads the wrong union member.
//
//   JsonReader reader;
//   const JsonPath spec{&root, "spec"};
//   std::string name = reader.string(reader.member(obj, "name"), JsonPath{&spec, "name"});
//   if (!reader.ok()) return error(reader.error());

#include <rapidjson/document.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/pod_view.h"

namespace kubegap {

// JsonPath: a node of the path to a value, kept on the stack and rendered only on error.
struct JsonPath {
  const JsonPath* parent = nullptr;
  std::string_view name;
  std::size_t index = kNoIndex;
  static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);

  std::string render() const;
};

// is_placeholder: a whole-value envsubst variable, `$NAME` or `${NAME}` (also Katib's
// `${trialParameters.x}`): a manifest template not yet rendered. Readers take it as set at
// deploy time (a quantity as requested, an integer as unset) and note it.
bool is_placeholder(std::string_view text);

class JsonReader {
 public:
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(const JsonPath& path, std::string_view what);

  // member: the member `name` of `object` when it is present and not null; nullptr
  // otherwise (also when `object` is not an object: the caller checks that once).
  static const rapidjson::Value* member(const rapidjson::Value* object, std::string_view name);
  // members: member() of each of `names`, in one pass over the object's members: for an
  // object whose fields are read one after another (the review's envelope).
  template <std::size_t N>
  static std::array<const rapidjson::Value*, N> members(const rapidjson::Value* object,
                                                        const std::array<std::string_view, N>& names) {
    std::array<const rapidjson::Value*, N> found{};
    if (object == nullptr || !object->IsObject()) return found;
    std::array<bool, N> seen{};  // the first member of a name counts, as member() finds it
    for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
      const std::string_view key(it->name.GetString(), it->name.GetStringLength());
      for (std::size_t i = 0; i < N; ++i) {
        if (!seen[i] && key == names[i]) {
          seen[i] = true;
          found[i] = it->value.IsNull() ? nullptr : &it->value;
          break;
        }
      }
    }
    return found;
  }
  // string_member: the member `name` when it is a string, else "" (for documents where a
  // missing or mistyped field is not an error: discovery, list metadata, Leases).
  static std::string string_member(const rapidjson::Value* object, std::string_view name);

  // object: `value` if it is an object; nullptr (and an error unless null) otherwise.
  const rapidjson::Value* object(const rapidjson::Value* value, const JsonPath& path);
  std::string string(const rapidjson::Value* value, const JsonPath& path);
  // string_view: string() as a view into the document, which must outlive it.
  std::string_view string_view(const rapidjson::Value* value, const JsonPath& path);
  bool boolean(const rapidjson::Value* value, const JsonPath& path);
  std::optional<std::int64_t> int64(const rapidjson::Value* value, const JsonPath& path);
  void string_map(const rapidjson::Value* value, const JsonPath& path, StringMap& out);
  std::vector<std::string> string_list(const rapidjson::Value* value, const JsonPath& path);

  // note: keeps a remark for the audit trail (a placeholder read as set at deploy time);
  // notes() are copied into the view's notes by the caller. Bounded: a hostile object
  // with thousands of placeholders keeps the first few.
  void note(std::string text) {
    ++noted_;
    if (notes_.size() < kMaxNotes) notes_.push_back(std::move(text));
  }
  const std::vector<std::string>& notes() const { return notes_; }
  // noted: how many notes were made, kept or not.
  std::size_t noted() const { return noted_; }
  // dropped_note: "N more notes not kept" when some were not, else empty.
  std::string dropped_note() const {
    return noted_ > notes_.size() ? std::to_string(noted_ - notes_.size()) + " more notes not kept" : std::string();
  }
  // prefix_notes: names where the notes kept from the `from`-th on were made ("trial: ").
  void prefix_notes(std::size_t from, const std::string& prefix) {
    for (std::size_t i = from; i < notes_.size(); ++i) notes_[i].insert(0, prefix);
  }

  // draw_text: counts `bytes` of text the object keeps as text (a wrapped template) toward
  // `limit` for the whole object; false, counting nothing, when they do not fit. An
  // AppWrapper of forty Experiments parses no more than one would.
  bool draw_text(std::size_t bytes, std::size_t limit) {
    if (bytes > limit || text_drawn_ > limit - bytes) return false;
    text_drawn_ += bytes;
    return true;
  }

  // each: calls fn(element, element_path) for every element of an array value.
  template <typename Fn>
  void each(const rapidjson::Value* value, const JsonPath& path, Fn&& fn) {
    if (value == nullptr) return;
    if (!value->IsArray()) return fail(path, "expected an array");
    std::size_t i = 0;
    for (const auto& element : value->GetArray()) {
      if (!ok()) return;
      fn(element, JsonPath{&path, {}, i++});
    }
  }

 private:
  static constexpr std::size_t kMaxNotes = 8;
  std::string error_;
  std::vector<std::string> notes_;
  std::size_t noted_ = 0;
  std::size_t text_drawn_ = 0;
};

}  // namespace kubegap
