#include "webhook/background_audit.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <exception>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/verb.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "webhook/json_reader.h"
#include "webhook/kube_client.h"
#include "webhook/logging.h"

namespace kubegap {

namespace {

namespace net = boost::asio;
using http_verb = boost::beast::http::verb;

std::int64_t int_at(const rapidjson::Value* object, const char* name) {
  const rapidjson::Value* v = JsonReader::member(object, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

std::string to_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

// blocking_send: one request on an event loop of its own (the audit's threads never
// touch the review or control loops). Its TLS context is made per call: a few calls a
// run, and a rotated service-account token or CA is picked up.
KubeResponse blocking_send(const KubeEndpoint& endpoint, http_verb verb, const std::string& target,
                           std::string body = {}) {
  KubeResponse out;
  try {
    net::io_context ioc;
    auto strand = net::make_strand(ioc);
    KubeClient client(strand, endpoint);
    net::co_spawn(strand, client.send(verb, target, std::move(body), std::size_t{64} << 20),
                  [&](std::exception_ptr e, KubeResponse r) {
                    out = std::move(r);
                    if (e) out.error = "request failed";
                  });
    ioc.run();
  } catch (const std::exception& e) {  // the client's TLS context (a CA that no longer loads)
    out.error = e.what();
  }
  return out;
}

// describe: "HTTP 403: <Status message>" or the transport error.
std::string describe(const KubeResponse& r) {
  if (!r.error.empty()) return r.error;
  rapidjson::Document doc;
  doc.Parse(r.body.data(), r.body.size());
  const std::string message = doc.IsObject() ? JsonReader::string_member(&doc, "message") : std::string();
  return "HTTP " + std::to_string(r.status) + (message.empty() ? "" : ": " + message);
}

std::string default_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "kubegap") + "_" + std::to_string(getpid());
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string micro_time(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[96];  // room for any int GCC's format check can imagine
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(micros % 1000000));
  return buffer;
}

std::optional<LeaseRecord> parse_lease(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject() || JsonReader::string_member(&doc, "kind") != "Lease") return std::nullopt;
  const rapidjson::Value* meta = JsonReader::member(&doc, "metadata");
  const rapidjson::Value* spec = JsonReader::member(&doc, "spec");
  LeaseRecord r;
  r.resource_version = JsonReader::string_member(meta, "resourceVersion");
  if (spec != nullptr && spec->IsObject()) {
    r.holder = JsonReader::string_member(spec, "holderIdentity");
    r.duration_seconds = int_at(spec, "leaseDurationSeconds");
    r.renew_time = JsonReader::string_member(spec, "renewTime");
    r.acquire_time = JsonReader::string_member(spec, "acquireTime");
    r.transitions = int_at(spec, "leaseTransitions");
  }
  return r;
}

std::string lease_body(const std::string& name, const std::string& namespace_name, const LeaseRecord& record) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "coordination.k8s.io/v1", a);
  doc.AddMember("kind", "Lease", a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", rapidjson::Value(name.c_str(), a), a);
  meta.AddMember("namespace", rapidjson::Value(namespace_name.c_str(), a), a);
  if (!record.resource_version.empty()) {
    meta.AddMember("resourceVersion", rapidjson::Value(record.resource_version.c_str(), a), a);
  }
  doc.AddMember("metadata", meta, a);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("holderIdentity", rapidjson::Value(record.holder.c_str(), a), a);
  spec.AddMember("leaseDurationSeconds", record.duration_seconds, a);
  if (!record.acquire_time.empty()) spec.AddMember("acquireTime", rapidjson::Value(record.acquire_time.c_str(), a), a);
  if (!record.renew_time.empty()) spec.AddMember("renewTime", rapidjson::Value(record.renew_time.c_str(), a), a);
  spec.AddMember("leaseTransitions", record.transitions, a);
  doc.AddMember("spec", spec, a);
  return to_json(doc);
}

LeaderElector::Action LeaderElector::decide(const std::optional<LeaseRecord>& current,
                                            std::chrono::steady_clock::time_point now) {
  if (!current) {
    observed_.reset();
    return Action::kCreate;
  }
  // The record changed since we last looked: its holder is alive (or it is new to us).
  const bool changed = !observed_ || observed_->holder != current->holder ||
                       observed_->renew_time != current->renew_time ||
                       observed_->resource_version != current->resource_version;
  if (changed) {
    observed_ = current;
    observed_at_ = now;
  }
  if (current->holder.empty() || current->holder == identity_) return Action::kUpdate;
  const auto held_for = std::chrono::seconds(current->duration_seconds > 0 ? current->duration_seconds : duration_.count());
  return now - observed_at_ >= held_for ? Action::kUpdate : Action::kWait;
}

LeaseRecord LeaderElector::next_record(const std::optional<LeaseRecord>& current,
                                       std::chrono::system_clock::time_point now) const {
  LeaseRecord next;
  next.holder = identity_;
  next.duration_seconds = duration_.count();
  next.renew_time = micro_time(now);
  if (current && current->holder == identity_) {
    next.acquire_time = current->acquire_time;
    next.transitions = current->transitions;
  } else {
    next.acquire_time = next.renew_time;
    next.transitions = current ? current->transitions + 1 : 0;
  }
  if (current) next.resource_version = current->resource_version;
  return next;
}

std::map<std::pair<std::string, std::string>, std::size_t> count_findings(const CheckReport& report) {
  std::map<std::pair<std::string, std::string>, std::size_t> out;
  for (const auto& object : report.objects) {
    for (const auto& f : object.findings) {
      if (f.outcome == Outcome::kFinding) ++out[{f.check, object.namespace_name}];
    }
  }
  return out;
}

BackgroundAudit::BackgroundAudit(KubeEndpoint endpoint, const PolicyStore& policies, Metrics& metrics,
                                 AuditOptions options)
    : endpoint_(std::move(endpoint)), policies_(policies), metrics_(metrics), options_(std::move(options)),
      elector_(options_.identity.empty() ? default_identity() : options_.identity, options_.lease_duration) {
  options_.scan.cancelled = [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  };
}

BackgroundAudit::~BackgroundAudit() { stop(); }

void BackgroundAudit::start() {
  metrics_.audit_enabled();
  lease_thread_ = std::thread([this] { lease_loop(); });
  audit_thread_ = std::thread([this] { audit_loop(); });
}

void BackgroundAudit::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (audit_thread_.joinable()) audit_thread_.join();
  if (lease_thread_.joinable()) lease_thread_.join();
}

bool BackgroundAudit::leader() const {
  std::lock_guard lock(mutex_);
  return leader_;
}

bool BackgroundAudit::sleep_for(std::chrono::steady_clock::duration d) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

void BackgroundAudit::lease_loop() {
  const std::string collection = "/apis/coordination.k8s.io/v1/namespaces/" + url_encode(options_.lease_namespace) + "/leases";
  const std::string item = collection + "/" + url_encode(options_.lease_name);
  // When the Lease was last written by us; `renewed_ever` false before the first time.
  // (Not an optional: GCC 12 at -O1 warns that one may be read uninitialised.)
  std::chrono::steady_clock::time_point renewed{};
  bool renewed_ever = false;
  std::string last_error;
  do {
    const auto now = std::chrono::steady_clock::now();
    const KubeResponse got = blocking_send(endpoint_, http_verb::get, item);
    std::optional<LeaseRecord> current;
    bool readable = got.error.empty() && (got.status == 200 || got.status == 404);
    if (readable && got.status == 200) {
      current = parse_lease(got.body);
      readable = current.has_value();
    }
    std::string error;
    if (!readable) {
      error = "reading the Lease: " + describe(got);
    } else {
      const auto action = elector_.decide(current, now);
      if (action != LeaderElector::Action::kWait) {
        const LeaseRecord next = elector_.next_record(current, std::chrono::system_clock::now());
        const KubeResponse wrote =
            action == LeaderElector::Action::kCreate
                ? blocking_send(endpoint_, http_verb::post, collection, lease_body(options_.lease_name, options_.lease_namespace, next))
                : blocking_send(endpoint_, http_verb::put, item, lease_body(options_.lease_name, options_.lease_namespace, next));
        if (wrote.error.empty() && (wrote.status == 200 || wrote.status == 201)) {
          renewed = now;
          renewed_ever = true;
          std::lock_guard lock(mutex_);
          held_ = parse_lease(wrote.body);
        } else if (wrote.status != 409) {  // 409: another replica wrote first; not an error
          error = "writing the Lease: " + describe(wrote);
        }
      } else {
        renewed_ever = false;
      }
    }
    // Leader while the last renewal is younger than the lease: a replica cut off from the
    // API server stops writing before another may take over.
    const bool lead = renewed_ever && now - renewed < options_.lease_duration;
    bool changed = false;
    {
      std::lock_guard lock(mutex_);
      changed = lead != leader_;
      leader_ = lead;
      if (!lead) held_.reset();
    }
    metrics_.audit_leader(lead);
    if (changed) {
      log_event(spdlog::level::info, lead ? "background audit: leading (this replica writes the reports)"
                                          : "background audit: not leading",
                {{"identity", elector_.identity()}, {"lease", options_.lease_namespace + "/" + options_.lease_name}});
      wake_.notify_all();
    }
    if (!error.empty() && error != last_error) {
      log_event(spdlog::level::warn, "background audit: lease", {{"error", error}});
    }
    last_error = error;
  } while (sleep_for(options_.renew_period));
  // Give the Lease up (client-go's ReleaseOnCancel): the next replica takes it at once
  // instead of after its duration.
  std::optional<LeaseRecord> held;
  {
    std::lock_guard lock(mutex_);
    held = held_;
    leader_ = false;
  }
  metrics_.audit_leader(false);
  if (held) {
    LeaseRecord released = *held;
    released.holder.clear();
    released.duration_seconds = 1;
    const KubeResponse r = blocking_send(endpoint_, http_verb::put, item,
                                         lease_body(options_.lease_name, options_.lease_namespace, released));
    log_event(r.error.empty() && r.status == 200 ? spdlog::level::info : spdlog::level::warn,
              "background audit: lease released", {{"result", r.error.empty() && r.status == 200 ? "ok" : describe(r)}});
  }
}

void BackgroundAudit::audit_loop() {
  std::chrono::steady_clock::time_point last_run{};
  bool ran = false;  // since becoming leader
  while (sleep_for(std::chrono::seconds(1))) {
    if (!leader()) {
      ran = false;  // a replica that takes over runs at once
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (ran && now - last_run < options_.interval) continue;
    last_run = now;
    ran = true;
    run_once();
  }
}

void BackgroundAudit::run_once() {
  const auto started = std::chrono::steady_clock::now();
  AuditSummary summary;
  ScanStats stats;
  std::string error;
  try {
    const auto policy = policies_.get();
    const CheckReport report = scan_cluster(endpoint_, options_.scan, *policy, &stats);
    summary.objects = report.objects.size();
    summary.findings = count_findings(report);
    // Reports are written only from a whole scan: a resource that failed to list would
    // otherwise drop its objects' results, and bring them back next run. A kind that RBAC
    // forbids (403) stays forbidden, so leaving it out does not flap: logged, not fatal.
    const auto transient = std::find_if(report.errors.begin(), report.errors.end(), [](const InputProblem& p) {
      return p.message.find("HTTP 403") == std::string::npos;
    });
    for (const auto& e : report.errors) {
      if (e.message.find("HTTP 403") != std::string::npos) {
        log_event(spdlog::level::warn, "background audit: forbidden, left out", {{"resource", e.file}, {"error", e.message}});
      }
    }
    if (transient != report.errors.end()) {
      error = transient->text();
    } else if (options_.write_reports && leader()) {
      write_reports(report, stats);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  summary.ok = error.empty();
  summary.api_requests = stats.requests;
  summary.finished_unix = unix_now();
  summary.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::size_t findings = 0;
  for (const auto& [key, n] : summary.findings) findings += n;
  metrics_.audit_finished(summary);
  log_event(summary.ok ? spdlog::level::info : spdlog::level::warn, "background audit finished",
            {{"objects", std::to_string(summary.objects), false},
             {"findings", std::to_string(findings), false},
             {"api_requests", std::to_string(stats.requests), false},
             {"seconds", std::to_string(summary.duration_seconds), false},
             {"error", error.empty() ? "none" : error}});
}

void BackgroundAudit::write_reports(const CheckReport& report, ScanStats& stats) {
  const auto flavour = options_.flavour;
  const std::string api = "/apis/" + std::string(report_api_version(flavour));
  const auto collection = [&](const std::string& namespace_name) {
    return namespace_name.empty() ? api + "/" + std::string(report_resource(flavour, true))
                                  : api + "/namespaces/" + url_encode(namespace_name) + "/" +
                                        std::string(report_resource(flavour, false));
  };
  const auto send = [&](http_verb verb, const std::string& target, std::string body = {}) {
    ++stats.requests;
    return blocking_send(endpoint_, verb, target, std::move(body));
  };
  std::set<std::string> wanted;  // namespaces that keep a report ("" for the cluster one)
  for (const auto& doc : build_policy_reports(report, flavour, unix_now())) {
    wanted.insert(doc.namespace_name);
    const std::string item = collection(doc.namespace_name) + "/" + kReportName;
    const KubeResponse existing = send(http_verb::get, item);
    KubeResponse wrote;
    if (existing.error.empty() && existing.status == 404) {
      wrote = send(http_verb::post, collection(doc.namespace_name), doc.json);
    } else if (existing.error.empty() && existing.status == 200) {
      // Update in place, guarded by the resourceVersion read (409 if someone else wrote).
      rapidjson::Document current, next;
      current.Parse(existing.body.data(), existing.body.size());
      next.Parse(doc.json.data(), doc.json.size());
      const std::string version = JsonReader::string_member(JsonReader::member(&current, "metadata"), "resourceVersion");
      next["metadata"].AddMember("resourceVersion", rapidjson::Value(version.c_str(), next.GetAllocator()),
                                 next.GetAllocator());
      wrote = send(http_verb::put, item, to_json(next));
    } else {
      wrote = existing;
    }
    if (!wrote.error.empty() || (wrote.status != 200 && wrote.status != 201)) {
      log_event(spdlog::level::warn, "background audit: report not written",
                {{"report", item}, {"error", describe(wrote)},
                 {"hint", wrote.status == 404 ? "is the PolicyReport CRD installed?" : "see the error"}});
      if (wrote.status == 404) return;  // the kind is not served: nothing else can be written
    }
  }
  // Reports of ours whose namespace has nothing evaluated any more: deleted.
  for (const bool cluster_scoped : {false, true}) {
    const std::string all = api + "/" + std::string(report_resource(flavour, cluster_scoped)) +
                            "?labelSelector=" + url_encode(std::string(kManagedByLabel) + "=" + kManagedBy);
    const KubeResponse listed = send(http_verb::get, all);
    if (!listed.error.empty() || listed.status != 200) continue;
    rapidjson::Document list;
    list.Parse(listed.body.data(), listed.body.size());
    const rapidjson::Value* items = JsonReader::member(&list, "items");
    if (items == nullptr || !items->IsArray()) continue;
    for (const auto& it : items->GetArray()) {
      const rapidjson::Value* meta = JsonReader::member(&it, "metadata");
      const std::string name = JsonReader::string_member(meta, "name"), namespace_name = JsonReader::string_member(meta, "namespace");
      if (name != kReportName || wanted.contains(namespace_name)) continue;
      const KubeResponse deleted = send(http_verb::delete_, collection(namespace_name) + "/" + name);
      if (!deleted.error.empty() || (deleted.status != 200 && deleted.status != 404)) {
        log_event(spdlog::level::warn, "background audit: stale report not deleted",
                  {{"namespace", namespace_name}, {"error", describe(deleted)}});
      }
    }
  }
}

}  // namespace kubegap
