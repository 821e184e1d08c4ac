#include "webhook/report/background_audit.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <ctime>
#include <exception>
#include <set>

#include "webhook/core/json_reader.h"
#include "webhook/kube/kube_client.h"
#include "webhook/telemetry/logging.h"

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

// describe: "HTTP 403: <Status message>" or the transport error, for logs.
std::string describe(const KubeResponse& r) { return api_error(r).text(); }

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
  const auto held_for =
      std::chrono::seconds(current->duration_seconds > 0 ? current->duration_seconds : duration_.count());
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
      if (f.outcome == Outcome::kFinding) ++out[{std::string(f.check), object.namespace_name}];
    }
  }
  return out;
}

ScanErrorWeight weigh_scan_errors(const ScanResult& result) {
  ScanErrorWeight out;
  const auto& errors = result.report.errors;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const int status = i < result.error_status.size() ? result.error_status[i] : 0;
    if (ApiError{status, {}}.forbidden()) {
      out.forbidden.push_back(errors[i]);
    } else if (!out.transient) {
      out.transient = errors[i];
    }
  }
  return out;
}

// Impl: the audit's state, on one strand of the control loop (so no locks: only `leader`
// is read from other threads). The lease loop and the audit loop are coroutines; when both
// have ended (after stop()), the Lease is released and the stop's callbacks run.
struct BackgroundAudit::Impl : std::enable_shared_from_this<BackgroundAudit::Impl> {
  Impl(net::io_context& control, KubeRequester sender, const PolicyStore& policy_store, Metrics& shared_metrics,
       AuditOptions audit_options)
      : strand(net::make_strand(control)),
        send(std::move(sender)),
        policies(policy_store),
        metrics(shared_metrics),
        options(std::move(audit_options)),
        elector(options.identity.empty() ? default_identity() : options.identity, options.lease_duration),
        lease_timer(strand),
        audit_timer(strand) {
    const std::string collection =
        "/apis/coordination.k8s.io/v1/namespaces/" + url_encode(options.lease_namespace) + "/leases";
    lease_collection = collection;
    lease_item = collection + "/" + url_encode(options.lease_name);
    options.scan.cancelled = [this] { return stopping; };
  }

  net::strand<net::io_context::executor_type> strand;  // every member below lives on it
  KubeRequester send;
  const PolicyStore& policies;
  Metrics& metrics;
  AuditOptions options;
  LeaderElector elector;
  std::string lease_collection, lease_item;
  net::steady_timer lease_timer;  // the renew period's wait
  net::steady_timer audit_timer;  // the wait for the next run, or for the Lease
  std::atomic<bool> leader{false};
  bool started = false;
  bool stopping = false;
  bool finished = false;            // both loops ended and the Lease released
  int running = 0;                  // loops not yet ended
  std::optional<LeaseRecord> held;  // the record we last wrote (to release it)
  std::vector<std::function<void()>> on_stopped;

  void start();
  void stop(std::function<void()> done);
  void spawn(net::awaitable<void> (Impl::*loop)());
  void loop_ended();

  net::awaitable<void> lease_loop();
  net::awaitable<void> release();
  net::awaitable<void> audit_loop();
  net::awaitable<void> run_once();
  net::awaitable<bool> write_reports(const CheckReport& report, ScanStats& stats);
  net::awaitable<KubeResponse> request(http_verb verb, std::string target, std::string body = {});
  // pause: waits on `timer` until `until` or until woken; false when stopping.
  net::awaitable<bool> pause(net::steady_timer& timer, std::chrono::steady_clock::time_point until);
};

void BackgroundAudit::Impl::start() {
  if (started || stopping) return;
  started = true;
  spawn(&Impl::lease_loop);
  spawn(&Impl::audit_loop);
}

void BackgroundAudit::Impl::spawn(net::awaitable<void> (Impl::*loop)()) {
  ++running;
  net::co_spawn(strand, (this->*loop)(), [self = shared_from_this()](const std::exception_ptr& e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& failure) {
        log_event(spdlog::level::err, "background audit: loop failed", {{"error", failure.what()}});
      } catch (...) {
        log_event(spdlog::level::err, "background audit: loop failed", {{"error", "unknown exception"}});
      }
    }
    self->loop_ended();
  });
}

void BackgroundAudit::Impl::stop(std::function<void()> done) {
  if (done) on_stopped.push_back(std::move(done));
  if (!stopping) {
    stopping = true;
    lease_timer.cancel();
    audit_timer.cancel();
  }
  if (!started) finished = true;
  if (!finished) return;  // loop_ended() runs them
  for (auto& callback : std::exchange(on_stopped, {})) callback();
}

void BackgroundAudit::Impl::loop_ended() {
  if (--running > 0) return;
  // Both loops have ended: no request of a run is in flight any more, so the Lease can go
  // without another replica's reports crossing ours.
  net::co_spawn(strand, release(), [self = shared_from_this()](const std::exception_ptr&) {
    self->finished = true;
    for (auto& callback : std::exchange(self->on_stopped, {})) callback();
  });
}

net::awaitable<KubeResponse> BackgroundAudit::Impl::request(http_verb verb, std::string target, std::string body) {
  co_return co_await send(verb, std::move(target), std::move(body), std::size_t{64} << 20);
}

net::awaitable<bool> BackgroundAudit::Impl::pause(net::steady_timer& timer,
                                                  std::chrono::steady_clock::time_point until) {
  if (stopping) co_return false;
  timer.expires_at(until);
  co_await timer.async_wait(net::as_tuple(net::use_awaitable));  // cancelled: woken early
  co_return !stopping;
}

net::awaitable<void> BackgroundAudit::Impl::lease_loop() {
  // When the Lease was last written by us; `renewed_ever` false before the first time.
  // (Not an optional: GCC 12 at -O1 warns that one may be read uninitialised.)
  std::chrono::steady_clock::time_point renewed{};
  bool renewed_ever = false;
  std::string last_error;
  do {
    const auto now = std::chrono::steady_clock::now();
    const KubeResponse got = co_await request(http_verb::get, lease_item);
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
      const auto action = elector.decide(current, now);
      if (action != LeaderElector::Action::kWait) {
        const LeaseRecord next = elector.next_record(current, std::chrono::system_clock::now());
        const std::string body = lease_body(options.lease_name, options.lease_namespace, next);
        // Not `const x = c ? co_await a : co_await b`: GCC 12 destroys that result early.
        KubeResponse wrote;
        if (action == LeaderElector::Action::kCreate) {
          wrote = co_await request(http_verb::post, lease_collection, body);
        } else {
          wrote = co_await request(http_verb::put, lease_item, body);
        }
        if (wrote.error.empty() && (wrote.status == 200 || wrote.status == 201)) {
          renewed = now;
          renewed_ever = true;
          held = parse_lease(wrote.body);
        } else if (wrote.status != 409) {  // 409: another replica wrote first; not an error
          error = "writing the Lease: " + describe(wrote);
        }
      } else {
        renewed_ever = false;
      }
    }
    // Leader while the last renewal is younger than the lease: a replica cut off from the
    // API server stops writing before another may take over.
    const bool lead = renewed_ever && now - renewed < options.lease_duration;
    const bool changed = lead != leader.exchange(lead);
    if (!lead) held.reset();
    metrics.audit_leader(lead);
    if (changed) {
      log_event(spdlog::level::info,
                lead ? "background audit: leading (this replica writes the reports)" : "background audit: not leading",
                {{"identity", elector.identity()}, {"lease", options.lease_namespace + "/" + options.lease_name}});
      audit_timer.cancel();  // a new leader runs at once; one that lost the Lease stops waiting to
    }
    if (!error.empty() && error != last_error) {
      log_event(spdlog::level::warn, "background audit: lease", {{"error", error}});
    }
    last_error = error;
  } while (co_await pause(lease_timer, std::chrono::steady_clock::now() + options.renew_period));
  leader = false;
  metrics.audit_leader(false);
}

net::awaitable<void> BackgroundAudit::Impl::release() {
  if (!held) co_return;
  // Give the Lease up (client-go's ReleaseOnCancel): the next replica takes it at once
  // instead of after its duration.
  LeaseRecord released = *held;
  held.reset();
  released.holder.clear();
  released.duration_seconds = 1;
  const KubeResponse r =
      co_await request(http_verb::put, lease_item, lease_body(options.lease_name, options.lease_namespace, released));
  const bool ok = r.error.empty() && r.status == 200;
  log_event(ok ? spdlog::level::info : spdlog::level::warn, "background audit: lease released",
            {{"result", ok ? "ok" : describe(r)}});
}

net::awaitable<void> BackgroundAudit::Impl::audit_loop() {
  std::chrono::steady_clock::time_point last_run{};
  bool ran = false;  // since becoming leader
  while (!stopping) {
    if (!leader) {
      ran = false;  // a replica that takes over runs at once (the lease loop wakes us)
      co_await pause(audit_timer, std::chrono::steady_clock::time_point::max());
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (ran && now - last_run < options.interval) {
      co_await pause(audit_timer, last_run + options.interval);
      continue;
    }
    last_run = now;
    ran = true;
    co_await run_once();
  }
}

net::awaitable<void> BackgroundAudit::Impl::run_once() {
  const auto started_at = std::chrono::steady_clock::now();
  AuditSummary summary;
  ScanStats stats;
  std::string error;
  try {
    const auto policy = policies.get();
    const ScanResult result = co_await scan_cluster(getter_of(send), options.scan, *policy);
    stats = result.stats;
    summary.objects = result.report.objects.size();
    summary.findings = count_findings(result.report);
    const ScanErrorWeight errors = weigh_scan_errors(result);
    for (const auto& e : errors.forbidden) {
      log_event(spdlog::level::warn, "background audit: forbidden, left out",
                {{"resource", e.file}, {"error", e.message}});
    }
    if (errors.transient) {
      error = errors.transient->text();
    } else if (options.write_reports && leader) {
      if (!co_await write_reports(result.report, stats)) error = "stopped before every report was written";
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  summary.ok = error.empty();
  summary.api_requests = stats.requests;
  summary.finished_unix = unix_now();
  summary.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count();
  std::size_t findings = 0;
  for (const auto& [key, n] : summary.findings) findings += n;
  metrics.audit_finished(summary);
  log_event(summary.ok ? spdlog::level::info : spdlog::level::warn, "background audit finished",
            {{"objects", std::to_string(summary.objects), false},
             {"findings", std::to_string(findings), false},
             {"api_requests", std::to_string(stats.requests), false},
             {"seconds", std::to_string(summary.duration_seconds), false},
             {"error", error.empty() ? "none" : error}});
}

net::awaitable<bool> BackgroundAudit::Impl::write_reports(const CheckReport& report, ScanStats& stats) {
  const auto flavour = options.flavour;
  const std::string api = "/apis/" + std::string(report_api_version(flavour));
  const auto collection = [&](const std::string& namespace_name) {
    return namespace_name.empty()
               ? api + "/" + std::string(report_resource(flavour, true))
               : api + "/namespaces/" + url_encode(namespace_name) + "/" + std::string(report_resource(flavour, false));
  };
  // Each request first asks whether the audit is stopping: a stopped run ends at its next
  // request, so the Lease is released promptly (what is not written now is next run's).
  const auto send_counted = [&](http_verb verb, const std::string& target, std::string body = {}) {
    ++stats.requests;
    return request(verb, target, std::move(body));
  };
  std::set<std::string> wanted;  // namespaces that keep a report ("" for the cluster one)
  for (const auto& doc : build_policy_reports(report, flavour, unix_now())) {
    wanted.insert(doc.namespace_name);
    const std::string item = collection(doc.namespace_name) + "/" + kReportName;
    if (stopping) co_return false;
    const KubeResponse existing = co_await send_counted(http_verb::get, item);
    KubeResponse wrote;
    if (existing.error.empty() && existing.status == 404) {
      if (stopping) co_return false;
      wrote = co_await send_counted(http_verb::post, collection(doc.namespace_name), doc.json);
    } else if (existing.error.empty() && existing.status == 200) {
      // Update in place, guarded by the resourceVersion read (409 if someone else wrote).
      rapidjson::Document current, next;
      current.Parse(existing.body.data(), existing.body.size());
      next.Parse(doc.json.data(), doc.json.size());
      const std::string version =
          JsonReader::string_member(JsonReader::member(&current, "metadata"), "resourceVersion");
      next["metadata"].AddMember("resourceVersion", rapidjson::Value(version.c_str(), next.GetAllocator()),
                                 next.GetAllocator());
      if (stopping) co_return false;
      wrote = co_await send_counted(http_verb::put, item, to_json(next));
    } else {
      wrote = existing;
    }
    if (!wrote.error.empty() || (wrote.status != 200 && wrote.status != 201)) {
      log_event(spdlog::level::warn, "background audit: report not written",
                {{"report", item},
                 {"error", describe(wrote)},
                 {"hint", wrote.status == 404 ? "is the PolicyReport CRD installed?" : "see the error"}});
      if (wrote.status == 404) co_return true;  // the kind is not served: nothing else can be written
    }
  }
  // Reports of ours whose namespace has nothing evaluated any more: deleted.
  for (const bool cluster_scoped : {false, true}) {
    const std::string all = api + "/" + std::string(report_resource(flavour, cluster_scoped)) +
                            "?labelSelector=" + url_encode(std::string(kManagedByLabel) + "=" + kManagedBy);
    if (stopping) co_return false;
    const KubeResponse listed = co_await send_counted(http_verb::get, all);
    if (!listed.error.empty() || listed.status != 200) continue;
    rapidjson::Document list;
    list.Parse(listed.body.data(), listed.body.size());
    const rapidjson::Value* items = JsonReader::member(&list, "items");
    if (items == nullptr || !items->IsArray()) continue;
    for (const auto& it : items->GetArray()) {
      const rapidjson::Value* meta = JsonReader::member(&it, "metadata");
      const std::string name = JsonReader::string_member(meta, "name"),
                        namespace_name = JsonReader::string_member(meta, "namespace");
      if (name != kReportName || wanted.contains(namespace_name)) continue;
      if (stopping) co_return false;
      const KubeResponse deleted = co_await send_counted(http_verb::delete_, collection(namespace_name) + "/" + name);
      if (!deleted.error.empty() || (deleted.status != 200 && deleted.status != 404)) {
        log_event(spdlog::level::warn, "background audit: stale report not deleted",
                  {{"namespace", namespace_name}, {"error", describe(deleted)}});
      }
    }
  }
  co_return true;
}

BackgroundAudit::BackgroundAudit(net::io_context& control, KubeEndpoint endpoint, const PolicyStore& policies,
                                 Metrics& metrics, AuditOptions options)
    : impl_(std::make_shared<Impl>(control, KubeRequester{}, policies, metrics, std::move(options))) {
  impl_->send = fresh_client_requester(impl_->strand, std::move(endpoint));
}

BackgroundAudit::BackgroundAudit(net::io_context& control, KubeRequester send, const PolicyStore& policies,
                                 Metrics& metrics, AuditOptions options)
    : impl_(std::make_shared<Impl>(control, std::move(send), policies, metrics, std::move(options))) {}

BackgroundAudit::~BackgroundAudit() {
  // stop() only posts to the control loop; a post throws only when allocation fails, and a
  // destructor must not throw: the loops then end with the control loop.
  try {
    stop();
  } catch (...) {  // nothing better to do in a destructor
  }
}

void BackgroundAudit::start() {
  impl_->metrics.audit_enabled();
  net::post(impl_->strand, [impl = impl_] { impl->start(); });
}

void BackgroundAudit::stop(std::function<void()> done) {
  net::post(impl_->strand, [impl = impl_, done = std::move(done)]() mutable { impl->stop(std::move(done)); });
}

bool BackgroundAudit::leader() const { return impl_->leader.load(); }

}  // namespace kubegap
