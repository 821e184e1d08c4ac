#include "webhook/core/object_decoder.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>

namespace kubegap {
namespace {

using rapidjson::Value;

// parse_quantity: resource.ParseQuantity's verdict on `text` (k8s.io/apimachinery
// pkg/api/resource/quantity.go, v0.36, parseQuantityString and ParseQuantity): a sign,
// digits, a fraction, then a suffix: binary (Ki..Ei), decimal (n, u, m, "", k, M..E) or
// an exponent (e3, E-2; the exponent wraps to 32 bits as there). Digits may be absent
// ("Ki", "+", ".": zero) when ParseQuantity takes its fast path; its slow path (a scale
// below nano, a binary fraction, more than 18 digits) needs one. The differential oracle
// (tests/oracle) holds this to the upstream function.
QuantityText parse_quantity(std::string_view text) {
  if (text.empty()) return {};
  std::size_t i = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  while (i < text.size() && text[i] == '0') ++i;  // leading zeros are not digits of the number
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return text.substr(start, i - start);
  };
  const std::string_view num = digits();
  std::string_view denom;
  if (i < text.size() && text[i] == '.') {
    ++i;
    denom = digits();
  }
  const bool has_digit = text.find_first_of("0123456789") < i;
  const bool zero =
      num.find_first_not_of('0') == std::string_view::npos && denom.find_first_not_of('0') == std::string_view::npos;
  std::string_view suffix = text.substr(i);
  // The suffix: letters of "eEinumkKMGTP", then an optional sign and digits, nothing else.
  std::size_t j = 0;
  while (j < suffix.size() && std::string_view("eEinumkKMGTP").find(suffix[j]) != std::string_view::npos) ++j;
  if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) ++j;
  while (j < suffix.size() && suffix[j] >= '0' && suffix[j] <= '9') ++j;
  if (j != suffix.size()) return {};
  std::int32_t exponent = 0;
  bool binary = false;
  static constexpr std::pair<std::string_view, std::int32_t> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, std::int32_t> kBinary[] = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                                          {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  const auto find = [&](const auto& table) {
    for (const auto& [name, value] : table) {
      if (suffix == name) {
        exponent = value;
        return true;
      }
    }
    return false;
  };
  if (find(kBinary)) {
    binary = true;
  } else if (!find(kDecimal)) {
    // An exponent: "e" or "E", then an int64 (strconv.ParseInt), kept as its low 32 bits.
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return {};
    std::int64_t value = 0;
    const std::string_view number = suffix.substr(suffix[1] == '+' ? 2 : 1);
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || end != number.data() + number.size() || number.empty()) return {};
    exponent = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(value)));
  }
  const auto figures = static_cast<std::int64_t>(num.size() + denom.size());
  bool fast = false;
  if (binary) {
    fast = denom.empty() && 15 - static_cast<std::int64_t>(num.size()) - exponent * 3 / 10 - 1 >= 0;
  } else {
    fast = 18 - figures >= 0 && static_cast<std::int64_t>(exponent) - static_cast<std::int64_t>(denom.size()) >= -9;
  }
  if (!fast && !has_digit) return {};  // the slow path parses the number, which has none
  return {true, zero};
}

// decode_resource_names: the resources `resources` requests or limits with a quantity that
// is not zero, each once. A `$VAR` placeholder is read as requested (with a note); any
// other text that is not a quantity ("{{ .Values.gpus }}") fails the object.
void decode_resource_names(JsonReader& reader, const Value* resources, const JsonPath& path,
                           std::vector<std::string>& out) {
  if (reader.object(resources, path) == nullptr) return;
  const Value* requests = JsonReader::member(resources, "requests");
  const Value* limits = JsonReader::member(resources, "limits");
  // Room for every name at once (a container names a handful): one allocation, not one
  // per doubling; capped, so a body naming thousands reserves no more than it keeps.
  const auto count = [](const Value* map) -> std::size_t {
    return map != nullptr && map->IsObject() ? map->MemberCount() : 0;
  };
  out.reserve(out.size() + std::min<std::size_t>(count(requests) + count(limits), 16));
  for (const auto& [section, member] : {std::pair{"requests", requests}, std::pair{"limits", limits}}) {
    const JsonPath section_path{&path, section};
    const Value* map = reader.object(member, section_path);
    if (map == nullptr) continue;
    for (const auto& entry : map->GetObject()) {
      std::string name(entry.name.GetString(), entry.name.GetStringLength());
      // `nvidia.com/gpu:` with no value (the API server reads a null quantity as zero) or
      // "" (a template variable that rendered empty) requests nothing: absent, no error.
      if (entry.value.IsNull() || (entry.value.IsString() && entry.value.GetStringLength() == 0)) continue;
      if (!entry.value.IsString() && !entry.value.IsNumber()) {
        return reader.fail(JsonPath{&section_path, name}, "expected a quantity");
      }
      const std::string_view text =
          entry.value.IsString() ? std::string_view(entry.value.GetString(), entry.value.GetStringLength()) : "";
      if (entry.value.IsString() && is_placeholder(text)) {
        // An envsubst template ($GPUS, ${GPU_PER_NODE}): set at deploy time, and a
        // resource named in a manifest is requested. Judged as requested, with a note.
        reader.note("resource " + name + " is " + std::string(text) + " (a placeholder, read as requested)");
        out.push_back(std::move(name));
        continue;
      }
      if (entry.value.IsString()) {
        const QuantityText quantity = parse_quantity(text);  // read once: valid, and whether zero
        if (!quantity.valid) return reader.fail(JsonPath{&section_path, name}, "not a quantity");
        if (!quantity.zero) out.push_back(std::move(name));
      } else if (entry.value.GetDouble() != 0.0) {
        out.push_back(std::move(name));
      }
    }
  }
  // requests and limits usually name the same resources: keep each once. Sorting keeps
  // this O(n log n) for hostile inputs with many thousands of names.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

// words: a command or args list. The API server takes strings only, but the checks read
// these as evidence, not as facts to enforce, so a number or boolean (an unquoted YAML
// scalar in a file `check` reads) is kept as its text rather than failing the object.
std::vector<std::string> words(JsonReader& reader, const Value* list, const JsonPath& path) {
  std::vector<std::string> out;
  reader.each(list, path, [&](const Value& v, const JsonPath&) {
    if (v.IsString()) {
      out.emplace_back(v.GetString(), v.GetStringLength());
    } else if (v.IsInt64()) {
      out.push_back(std::to_string(v.GetInt64()));
    } else if (v.IsBool()) {
      out.emplace_back(v.GetBool() ? "true" : "false");
    } else if (v.IsNumber()) {
      out.push_back(std::to_string(v.GetDouble()));
    }
  });
  return out;
}

// value_source: where an env var's valueFrom takes its value ("ConfigMap NAME", "Secret
// NAME", "the pod's fields"), or nothing without one. Malformed members are the API
// server's to refuse; they only make the source vaguer here.
std::string value_source(const Value* from) {
  if (from == nullptr || !from->IsObject()) return {};
  for (const auto& [member, kind] : {std::pair{"configMapKeyRef", "ConfigMap"}, std::pair{"secretKeyRef", "Secret"}}) {
    const Value* ref = JsonReader::member(from, member);
    if (ref == nullptr || !ref->IsObject()) continue;
    const Value* name = JsonReader::member(ref, "name");
    return std::string(kind) + (name != nullptr && name->IsString() ? " " + std::string(name->GetString()) : "");
  }
  return "the pod's fields";
}

Container decode_container(JsonReader& reader, const Value& value, const JsonPath& path) {
  Container container;
  if (reader.object(&value, path) == nullptr) return container;
  container.name = reader.string(JsonReader::member(&value, "name"), JsonPath{&path, "name"});
  container.image = reader.string(JsonReader::member(&value, "image"), JsonPath{&path, "image"});
  container.command = words(reader, JsonReader::member(&value, "command"), JsonPath{&path, "command"});
  container.args = words(reader, JsonReader::member(&value, "args"), JsonPath{&path, "args"});
  container.working_dir = reader.string(JsonReader::member(&value, "workingDir"), JsonPath{&path, "workingDir"});
  const JsonPath env_path{&path, "env"};
  reader.each(JsonReader::member(&value, "env"), env_path, [&](const Value& e, const JsonPath& p) {
    if (reader.object(&e, p) == nullptr) return;
    // A value that is not a string (an unquoted number in YAML) is still its value.
    const Value* v = JsonReader::member(&e, "value");
    std::string text;
    if (v != nullptr && v->IsString()) text.assign(v->GetString(), v->GetStringLength());
    container.env.push_back({reader.string(JsonReader::member(&e, "name"), JsonPath{&p, "name"}), std::move(text),
                             value_source(JsonReader::member(&e, "valueFrom"))});
  });
  const JsonPath env_from_path{&path, "envFrom"};
  reader.each(JsonReader::member(&value, "envFrom"), env_from_path, [&](const Value& e, const JsonPath& p) {
    if (reader.object(&e, p) == nullptr) return;
    const JsonPath ref_path{&p, "configMapRef"};
    const Value* ref = reader.object(JsonReader::member(&e, "configMapRef"), ref_path);
    std::string name = reader.string(JsonReader::member(ref, "name"), JsonPath{&ref_path, "name"});
    if (!name.empty()) container.env_from_config_maps.push_back(std::move(name));
    // A Secret's data is never in the input: its vars are set outside the object.
    const Value* secret = JsonReader::member(&e, "secretRef");
    const Value* secret_name = secret != nullptr && secret->IsObject() ? JsonReader::member(secret, "name") : nullptr;
    if (secret_name != nullptr && secret_name->IsString()) {
      container.env.push_back(
          {"", "", "Secret " + std::string(secret_name->GetString(), secret_name->GetStringLength())});
    }
  });
  decode_resource_names(reader, JsonReader::member(&value, "resources"), JsonPath{&path, "resources"},
                        container.resources);
  const JsonPath mounts_path{&path, "volumeMounts"};
  reader.each(JsonReader::member(&value, "volumeMounts"), mounts_path, [&](const Value& mount, const JsonPath& p) {
    if (reader.object(&mount, p) == nullptr) return;
    container.volume_mounts.push_back(
        {reader.string(JsonReader::member(&mount, "name"), JsonPath{&p, "name"}),
         reader.string(JsonReader::member(&mount, "mountPath"), JsonPath{&p, "mountPath"}),
         reader.boolean(JsonReader::member(&mount, "readOnly"), JsonPath{&p, "readOnly"}),
         reader.string(JsonReader::member(&mount, "subPath"), JsonPath{&p, "subPath"})});
  });
  // resources.claims: the pod resource claims (DRA) this container consumes.
  const JsonPath resources_path{&path, "resources"};
  const Value* resources = JsonReader::member(&value, "resources");
  const JsonPath claims_path{&resources_path, "claims"};
  reader.each(JsonReader::member(resources != nullptr && resources->IsObject() ? resources : nullptr, "claims"),
              claims_path, [&](const Value& claim, const JsonPath& p) {
                if (reader.object(&claim, p) == nullptr) return;
                container.claims.push_back(reader.string(JsonReader::member(&claim, "name"), JsonPath{&p, "name"}));
              });
  return container;
}

// The members of core/v1 VolumeSource; the one present names the volume's source.
// `read_only`: the source has a readOnly field that forces every mount of the volume
// read-only (core/v1 types); the others (hostPath, emptyDir, ...) have none, and a stray
// one inside an unvalidated custom resource's template is not read.
struct VolumeSourceKind {
  const char* name;
  bool read_only;
};
constexpr VolumeSourceKind kVolumeSources[] = {
    {"persistentVolumeClaim", true},
    {"emptyDir", false},
    {"hostPath", false},
    {"ephemeral", false},
    {"csi", true},
    {"nfs", true},
    {"cephfs", true},
    {"rbd", true},
    {"iscsi", true},
    {"azureFile", true},
    {"glusterfs", true},
    {"fc", true},
    {"gcePersistentDisk", true},
    {"awsElasticBlockStore", true},
    {"azureDisk", true},
    {"cinder", true},
    {"portworxVolume", true},
    {"vsphereVolume", false},
    {"configMap", false},
    {"secret", false},
    {"projected", false},
    {"downwardAPI", false},
    {"image", false},
    {"flexVolume", true},
    {"flocker", false},
    {"quobyte", true},
    {"scaleIO", true},
    {"storageos", true},
    {"photonPersistentDisk", false},
    {"gitRepo", false},
};

Volume decode_volume(JsonReader& reader, const Value& value, const JsonPath& path) {
  Volume volume;
  if (reader.object(&value, path) == nullptr) return volume;
  volume.name = reader.string(JsonReader::member(&value, "name"), JsonPath{&path, "name"});
  bool has_read_only = false;
  for (const auto& [source, read_only] : kVolumeSources) {
    if (JsonReader::member(&value, source) == nullptr) continue;
    volume.source = source;
    has_read_only = read_only;
    break;
  }
  if (has_read_only) {
    const JsonPath source_path{&path, volume.source};
    const Value* source = JsonReader::member(&value, volume.source);
    // A claim must be an object (as before); other sources are read only when they are.
    if (volume.source == "persistentVolumeClaim") source = reader.object(source, source_path);
    if (source != nullptr && source->IsObject()) {
      volume.read_only = reader.boolean(JsonReader::member(source, "readOnly"), JsonPath{&source_path, "readOnly"});
    }
  }
  if (volume.source == "csi") {
    const JsonPath csi_path{&path, "csi"};
    const Value* csi = reader.object(JsonReader::member(&value, "csi"), csi_path);
    volume.driver = reader.string(JsonReader::member(csi, "driver"), JsonPath{&csi_path, "driver"});
  }
  if (volume.source == "configMap") {
    const JsonPath cm_path{&path, "configMap"};
    const Value* cm = reader.object(JsonReader::member(&value, "configMap"), cm_path);
    volume.config_map = reader.string(JsonReader::member(cm, "name"), JsonPath{&cm_path, "name"});
    const JsonPath items_path{&cm_path, "items"};
    reader.each(JsonReader::member(cm, "items"), items_path, [&](const Value& item, const JsonPath& p) {
      if (reader.object(&item, p) == nullptr) return;
      volume.items.emplace_back(reader.string(JsonReader::member(&item, "key"), JsonPath{&p, "key"}),
                                reader.string(JsonReader::member(&item, "path"), JsonPath{&p, "path"}));
    });
  }
  if (volume.source == "flexVolume") {
    const JsonPath flex_path{&path, "flexVolume"};
    const Value* flex = reader.object(JsonReader::member(&value, "flexVolume"), flex_path);
    volume.driver = reader.string(JsonReader::member(flex, "driver"), JsonPath{&flex_path, "driver"});
  }
  return volume;
}

std::vector<Requirement> decode_requirements(JsonReader& reader, const Value* list, const JsonPath& path) {
  std::vector<Requirement> out;
  reader.each(list, path, [&](const Value& value, const JsonPath& p) {
    if (reader.object(&value, p) == nullptr) return;
    out.push_back({reader.string(JsonReader::member(&value, "key"), JsonPath{&p, "key"}),
                   reader.string(JsonReader::member(&value, "operator"), JsonPath{&p, "operator"}),
                   reader.string_list(JsonReader::member(&value, "values"), JsonPath{&p, "values"})});
  });
  return out;
}

// decode_required_node_affinity: the terms, and whether the field is there at all (with
// no term it admits no node).
void decode_required_node_affinity(JsonReader& reader, const Value* spec, const JsonPath& spec_path, PodSpecView& pod) {
  auto& terms = pod.required_node_terms;
  const JsonPath affinity_path{&spec_path, "affinity"};
  const Value* affinity = reader.object(JsonReader::member(spec, "affinity"), affinity_path);
  const JsonPath node_path{&affinity_path, "nodeAffinity"};
  const Value* node = reader.object(JsonReader::member(affinity, "nodeAffinity"), node_path);
  const JsonPath required_path{&node_path, "requiredDuringSchedulingIgnoredDuringExecution"};
  const Value* required =
      reader.object(JsonReader::member(node, "requiredDuringSchedulingIgnoredDuringExecution"), required_path);
  pod.required_node_affinity = required != nullptr;
  const JsonPath terms_path{&required_path, "nodeSelectorTerms"};
  reader.each(
      JsonReader::member(required, "nodeSelectorTerms"), terms_path, [&](const Value& value, const JsonPath& p) {
        if (reader.object(&value, p) == nullptr) return;
        terms.push_back(
            {decode_requirements(reader, JsonReader::member(&value, "matchExpressions"),
                                 JsonPath{&p, "matchExpressions"}),
             decode_requirements(reader, JsonReader::member(&value, "matchFields"), JsonPath{&p, "matchFields"})});
      });
}

Toleration decode_toleration(JsonReader& reader, const Value& value, const JsonPath& path) {
  Toleration t;
  if (reader.object(&value, path) == nullptr) return t;
  t.key = reader.string(JsonReader::member(&value, "key"), JsonPath{&path, "key"});
  t.op = reader.string(JsonReader::member(&value, "operator"), JsonPath{&path, "operator"});
  if (t.op.empty()) t.op = "Equal";  // the API default
  t.value = reader.string(JsonReader::member(&value, "value"), JsonPath{&path, "value"});
  t.effect = reader.string(JsonReader::member(&value, "effect"), JsonPath{&path, "effect"});
  t.toleration_seconds =
      reader.int64(JsonReader::member(&value, "tolerationSeconds"), JsonPath{&path, "tolerationSeconds"});
  return t;
}

PodResourceClaim decode_pod_resource_claim(JsonReader& reader, const Value& value, const JsonPath& path) {
  PodResourceClaim claim;
  if (reader.object(&value, path) == nullptr) return claim;
  claim.name = reader.string(JsonReader::member(&value, "name"), JsonPath{&path, "name"});
  claim.claim_name =
      reader.string(JsonReader::member(&value, "resourceClaimName"), JsonPath{&path, "resourceClaimName"});
  claim.template_name = reader.string(JsonReader::member(&value, "resourceClaimTemplateName"),
                                      JsonPath{&path, "resourceClaimTemplateName"});
  return claim;
}

template <typename T, typename Decode>
std::vector<T> decode_list(JsonReader& reader, const Value* list, const JsonPath& path, Decode decode) {
  std::vector<T> out;
  reader.each(list, path, [&](const Value& v, const JsonPath& p) { out.push_back(decode(reader, v, p)); });
  return out;
}

}  // namespace

QuantityText read_quantity_text(std::string_view text) { return parse_quantity(text); }

PodSpecView decode_pod_template(JsonReader& reader, const Value& value, const JsonPath& path) {
  PodSpecView pod;
  if (reader.object(&value, path) == nullptr) return pod;
  const JsonPath meta_path{&path, "metadata"};
  const Value* meta = reader.object(JsonReader::member(&value, "metadata"), meta_path);
  reader.string_map(JsonReader::member(meta, "labels"), JsonPath{&meta_path, "labels"}, pod.labels);
  reader.string_map(JsonReader::member(meta, "annotations"), JsonPath{&meta_path, "annotations"}, pod.annotations);

  const JsonPath spec_path{&path, "spec"};
  const Value* spec = reader.object(JsonReader::member(&value, "spec"), spec_path);
  pod.containers = decode_list<Container>(reader, JsonReader::member(spec, "containers"),
                                          JsonPath{&spec_path, "containers"}, decode_container);
  pod.init_containers = decode_list<Container>(reader, JsonReader::member(spec, "initContainers"),
                                               JsonPath{&spec_path, "initContainers"}, decode_container);
  pod.volumes =
      decode_list<Volume>(reader, JsonReader::member(spec, "volumes"), JsonPath{&spec_path, "volumes"}, decode_volume);
  reader.string_map(JsonReader::member(spec, "nodeSelector"), JsonPath{&spec_path, "nodeSelector"}, pod.node_selector);
  decode_required_node_affinity(reader, spec, spec_path, pod);
  pod.tolerations = decode_list<Toleration>(reader, JsonReader::member(spec, "tolerations"),
                                            JsonPath{&spec_path, "tolerations"}, decode_toleration);
  pod.node_name = reader.string(JsonReader::member(spec, "nodeName"), JsonPath{&spec_path, "nodeName"});
  pod.restart_policy = reader.string(JsonReader::member(spec, "restartPolicy"), JsonPath{&spec_path, "restartPolicy"});
  pod.resource_claims =
      decode_list<PodResourceClaim>(reader, JsonReader::member(spec, "resourceClaims"),
                                    JsonPath{&spec_path, "resourceClaims"}, decode_pod_resource_claim);
  return pod;
}

void decode_object_meta(JsonReader& reader, const Value& object, const JsonPath& path, WorkloadView& out) {
  const JsonPath meta_path{&path, "metadata"};
  const Value* meta = reader.object(JsonReader::member(&object, "metadata"), meta_path);
  out.namespace_name = reader.string(JsonReader::member(meta, "namespace"), JsonPath{&meta_path, "namespace"});
  out.name = reader.string(JsonReader::member(meta, "name"), JsonPath{&meta_path, "name"});
  if (out.name.empty()) {
    const std::string generate =
        reader.string(JsonReader::member(meta, "generateName"), JsonPath{&meta_path, "generateName"});
    if (!generate.empty()) out.name = generate + "*";
  }
  reader.string_map(JsonReader::member(meta, "labels"), JsonPath{&meta_path, "labels"}, out.labels);
  reader.string_map(JsonReader::member(meta, "annotations"), JsonPath{&meta_path, "annotations"}, out.annotations);
  // The controller owner (at most one reference has controller: true).
  const JsonPath owners_path{&meta_path, "ownerReferences"};
  reader.each(JsonReader::member(meta, "ownerReferences"), owners_path, [&](const Value& owner, const JsonPath& p) {
    if (reader.object(&owner, p) == nullptr) return;
    if (!reader.boolean(JsonReader::member(&owner, "controller"), JsonPath{&p, "controller"})) return;
    const std::string api_version = reader.string(JsonReader::member(&owner, "apiVersion"), JsonPath{&p, "apiVersion"});
    const auto slash = api_version.find('/');
    out.owner.api_group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    out.owner.kind = reader.string(JsonReader::member(&owner, "kind"), JsonPath{&p, "kind"});
    out.owner.name = reader.string(JsonReader::member(&owner, "name"), JsonPath{&p, "name"});
  });
}

std::optional<LabelSelector> decode_label_selector(JsonReader& reader, const Value* value, const JsonPath& path) {
  const Value* selector = reader.object(value, path);
  if (selector == nullptr) return std::nullopt;
  LabelSelector out;
  reader.string_map(JsonReader::member(selector, "matchLabels"), JsonPath{&path, "matchLabels"}, out.match_labels);
  out.match_expressions = decode_requirements(reader, JsonReader::member(selector, "matchExpressions"),
                                              JsonPath{&path, "matchExpressions"});
  return out;
}

DisruptionBudget decode_disruption_budget(JsonReader& reader, const Value& object, const JsonPath& path) {
  WorkloadView meta;
  decode_object_meta(reader, object, path, meta);
  const JsonPath spec_path{&path, "spec"};
  const Value* spec = reader.object(JsonReader::member(&object, "spec"), spec_path);
  return {meta.namespace_name.empty() ? "default" : meta.namespace_name, meta.name,
          decode_label_selector(reader, JsonReader::member(spec, "selector"), JsonPath{&spec_path, "selector"})};
}

ResourceClaimInfo decode_resource_claim(JsonReader& reader, const Value& object, const JsonPath& path) {
  WorkloadView meta;
  decode_object_meta(reader, object, path, meta);
  const std::string kind = [&] {
    const Value* k = JsonReader::member(&object, "kind");
    return k != nullptr && k->IsString() ? std::string(k->GetString(), k->GetStringLength()) : std::string();
  }();
  ResourceClaimInfo out{
      meta.namespace_name.empty() ? "default" : meta.namespace_name, meta.name, kind == "ResourceClaimTemplate", {}};
  // A template holds a claim spec under spec.spec; a claim under spec.
  const JsonPath spec_path{&path, "spec"};
  const Value* spec = reader.object(JsonReader::member(&object, "spec"), spec_path);
  const JsonPath claim_path{&spec_path, "spec"};
  const Value* claim = out.is_template ? reader.object(JsonReader::member(spec, "spec"), claim_path) : spec;
  const JsonPath& claim_at = out.is_template ? claim_path : spec_path;
  const JsonPath devices_path{&claim_at, "devices"};
  const Value* devices = reader.object(JsonReader::member(claim, "devices"), devices_path);
  const auto add_class = [&](const Value* holder, const JsonPath& at) {
    std::string name = reader.string(JsonReader::member(holder, "deviceClassName"), JsonPath{&at, "deviceClassName"});
    if (!name.empty()) out.device_classes.push_back(std::move(name));
  };
  const JsonPath requests_path{&devices_path, "requests"};
  reader.each(JsonReader::member(devices, "requests"), requests_path, [&](const Value& request, const JsonPath& p) {
    if (reader.object(&request, p) == nullptr) return;
    add_class(&request, p);
    const JsonPath exactly_path{&p, "exactly"};
    add_class(reader.object(JsonReader::member(&request, "exactly"), exactly_path), exactly_path);
    const JsonPath first_path{&p, "firstAvailable"};
    reader.each(JsonReader::member(&request, "firstAvailable"), first_path,
                [&](const Value& sub, const JsonPath& sp) { add_class(reader.object(&sub, sp), sp); });
  });
  return out;
}

NodeInfo decode_node(JsonReader& reader, const Value& object, const JsonPath& path) {
  WorkloadView meta;
  decode_object_meta(reader, object, path, meta);
  return {meta.name, std::move(meta.labels)};
}

}  // namespace kubegap
