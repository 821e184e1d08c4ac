"""The webhook against the transport floor (../shared/BENCH.md): nginx with one worker, the
same ECDSA P-256 certificate and TLS settings, answering POST /validate with the
webhook's own response to the same review, fixed. Both serve on one core, h2load drives
them from the other; servers alternate A/B/A/B and medians are reported as ratios, so a
noisy machine changes the figures, not the conclusion. Never fails on timing: only on a
wrong answer or a server that does not start.

    python3 tests/bench/transport_bench.py WEBHOOK_BINARY SOURCE_DIR [--quick]

Prints: closed-loop throughput (h2load --h1 -c32 -t1) at 1 thread, with the ratio to
nginx; throughput at 1, 2 and N webhook threads; latency p50/p99/p99.9 at a fixed offered
rate of half nginx's maximum, for both servers; RSS after 100k and 1M reviews (--quick:
fewer).
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CLIENTS = 32


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving_ports(log_path, proc, timeout=20):
    """The webhook's bound (listen, health_listen) ports, from its JSON "serving" line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if entry.get("msg") == "serving":
                    return (int(entry["listen"].rsplit(":", 1)[1]), int(entry["health_listen"].rsplit(":", 1)[1]))
        if proc.poll() is not None:
            sys.exit(f"kubegap-webhook exited ({proc.returncode}) before serving")
        time.sleep(0.05)
    sys.exit(f"kubegap-webhook did not log 'serving' within {timeout} s")


def wait_port(port, proc, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited ({proc.returncode}) before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"{what} did not listen on {port} within {timeout} s")


def cpus():
    return sorted(os.sched_getaffinity(0))


def pinned(cores, args):
    """taskset to `cores` when the machine has more than one core."""
    return ["taskset", "-c", ",".join(map(str, cores)), *args] if len(cpus()) > 1 else args


class Servers:
    def __init__(self, webhook, source, tmp, body):
        self.webhook, self.source, self.tmp, self.body = webhook, source, tmp, body
        self.certs = os.path.join(tmp, "certs")
        subprocess.run([os.path.join(source, "certs", "gen-certs.sh"), "--out", self.certs],
                       check=True, capture_output=True)
        self.procs = []
        self.health_ports = {}

    def server_cores(self):
        return cpus()[:1]

    def client_cores(self):
        return cpus()[1:] or cpus()

    def start_webhook(self, threads):
        # Port 0 for both listeners: the bound ports are read back from the "serving" log
        # line, so no port is picked, released and hoped to be free still.
        log_path = os.path.join(self.tmp, f"webhook-{threads}.log")
        log = open(log_path, "w")
        proc = subprocess.Popen(pinned(self.server_cores() if threads == 1 else cpus(), [
            self.webhook, "serve", "--tls-cert", os.path.join(self.certs, "tls.crt"),
            "--tls-key", os.path.join(self.certs, "tls.key"), "--listen", "127.0.0.1:0",
            "--health-listen", "127.0.0.1:0", "--threads", str(threads), "--log-format", "json"]),
            stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        port, health_port = serving_ports(log_path, proc)
        self.health_ports[proc.pid] = health_port
        return proc, port

    def response(self, port):
        """The webhook's answer to the review: what nginx will serve, fixed."""
        context = ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/validate", data=self.body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=10) as r:
            answer = r.read()
        review = json.loads(answer)
        if not review["response"]["allowed"] or not review["response"].get("warnings"):
            sys.exit(f"the webhook's answer is not an allowed review with warnings: {answer[:300]!r}")
        return answer.decode()

    def start_nginx(self, response, attempts=3):
        # nginx cannot listen on port 0 and tell us the port, so it gets a free one; if
        # another process takes it first, nginx fails to bind and exits: try another.
        for attempt in range(attempts):
            started = self._start_nginx_on(response, free_port(), last=attempt == attempts - 1)
            if started:
                return started
        raise AssertionError("unreachable")

    def _start_nginx_on(self, response, port, last):
        prefix = os.path.join(self.tmp, "nginx")
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        # nginx's quoted strings take \\ and \' escapes; the JSON has backslashes.
        quoted = response.replace("\\", "\\\\").replace("'", "\\'")
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  client_body_buffer_size 64k;
  client_body_temp_path {prefix}/body;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {self.certs}/tls.crt;
    ssl_certificate_key {self.certs}/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /validate {{
      default_type application/json;
      return 200 '{quoted}';
    }}
  }}
}}
""")
        pid_file = os.path.join(prefix, "nginx.pid")
        with contextlib.suppress(FileNotFoundError):
            os.remove(pid_file)  # a previous run's: the new one writes it once bound
        proc = subprocess.Popen(pinned(self.server_cores(), [nginx_binary(), "-p", prefix, "-c", conf]),
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(prefix, "logs", "stderr"), "w"))
        self.procs.append(proc)
        # nginx writes its pid file only once its listening socket is bound: until then a
        # connect could reach whoever else holds the port. Exiting instead (after its bind
        # retries) with "Address already in use" means the port was taken: try another.
        deadline = time.monotonic() + 20
        while proc.poll() is None and not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None and not last:
            logs = ""
            for name in ("stderr", "error.log"):
                with contextlib.suppress(OSError), open(os.path.join(prefix, "logs", name)) as err:
                    logs += err.read()
            if "Address already in use" in logs:
                return None
        wait_port(port, proc, "nginx")
        return proc, port

    def stop(self, proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_all(self):
        for p in self.procs:
            self.stop(p)


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def h2load(port, body_file, seconds=None, requests=None, rps=None, log_file=None, clients=CLIENTS):
    args = ["h2load", "--h1", "-c", str(clients), "-t", "1", "-d", body_file,
            "-H", "Content-Type: application/json"]
    if seconds is not None:
        args += ["-D", str(seconds)]
    else:
        args += ["-n", str(requests)]
    if rps is not None:
        args += [f"--rps={rps}"]
    if log_file is not None:
        args += ["--log-file", log_file]
    args.append(f"https://127.0.0.1:{port}/validate")
    out = subprocess.run(args, capture_output=True, text=True, timeout=(seconds or 600) + 120).stdout
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    ok = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", out)
    status = re.search(r"status codes: (\d+) 2xx", out)
    if not m or not ok or int(ok.group(2)) != 0 or not status or int(status.group(1)) == 0:
        sys.exit(f"h2load against port {port} failed or saw errors:\n{out}")
    return float(m.group(3)), int(ok.group(1))


def durations_us(log_file):
    """The sorted latencies (us) of the 200 answers in h2load's --log-file (start, status, duration)."""
    durations = []
    with open(log_file) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] == "200":
                durations.append(int(parts[2]))
    return sorted(durations)


def percentiles(log_file):
    """p50, p99, p99.9 in microseconds from h2load's --log-file."""
    durations = durations_us(log_file)
    if not durations:
        sys.exit(f"no successful requests in {log_file}")
    at = lambda q: durations[min(len(durations) - 1, int(len(durations) * q))]  # noqa: E731
    return at(0.50), at(0.99), at(0.999), len(durations)


def probes_under_load(port, health_port, body_file, seconds):
    """/healthz and /metrics latencies (ms) while h2load keeps every review thread busy."""
    load = threading.Thread(target=h2load, args=(port, body_file), kwargs={"seconds": seconds})
    load.start()
    time.sleep(min(1.0, seconds / 4))
    latencies = []
    while load.is_alive() and len(latencies) < 200:
        for path in ("/healthz", "/metrics"):
            start = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{health_port}{path}", timeout=30) as r:
                r.read()
                if r.status != 200:
                    sys.exit(f"{path} answered {r.status} under load")
            latencies.append((time.perf_counter() - start) * 1000)
        time.sleep(0.02)
    load.join()
    latencies.sort()
    if not latencies:
        sys.exit("no health probe ran under load")
    return latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], latencies[-1], len(latencies)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("webhook")
    parser.add_argument("source")
    parser.add_argument("--quick", action="store_true", help="shorter runs (CI): fewer rounds and requests")
    parser.add_argument("--body", help="the review to post (default tests/bench/reviews/gpu-pod-applied.json)")
    parser.add_argument("--out", help="keep the latency logs here (for tests/bench/plot.py)")
    args = parser.parse_args()
    for tool in ("h2load", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (./dev bench installs nghttp2-client, nginx-light)")
    if not os.path.exists(nginx_binary()):
        sys.exit("nginx not found (./dev bench installs nginx-light)")
    rounds, seconds = (3, 3) if args.quick else (5, 8)
    body_path = args.body or os.path.join(args.source, "tests", "bench", "reviews", "gpu-pod-applied.json")
    with open(body_path, "rb") as f:
        body = f.read()
    tmp = tempfile.mkdtemp(prefix="kubegap-bench-")
    servers = Servers(args.webhook, args.source, tmp, body)
    try:
        webhook, webhook_port = servers.start_webhook(1)
        response = servers.response(webhook_port)
        nginx, nginx_port = servers.start_nginx(response)
        # Warm both (TLS session setup, page faults), then alternate.
        h2load(webhook_port, body_path, seconds=1)
        h2load(nginx_port, body_path, seconds=1)
        floor, ours = [], []
        for _ in range(rounds):
            floor.append(h2load(nginx_port, body_path, seconds=seconds)[0])
            ours.append(h2load(webhook_port, body_path, seconds=seconds)[0])
        floor_rps, our_rps = statistics.median(floor), statistics.median(ours)

        # Latency at a fixed offered rate: half the floor's maximum, the same for both.
        rate = int(floor_rps / 2)
        per_client = max(1, rate // CLIENTS)
        latency = {}
        for name, port in (("nginx", nginx_port), ("kubegap-webhook", webhook_port)):
            log_file = os.path.join(tmp, f"latency-{name}.log")
            h2load(port, body_path, seconds=seconds, rps=per_client, log_file=log_file)
            latency[name] = percentiles(log_file)
            if args.out:
                os.makedirs(args.out, exist_ok=True)
                shutil.copy(log_file, os.path.join(args.out, f"latency-{name}.log"))
        # And at half the webhook's own maximum, for both: its service time without queueing
        # (when half the floor's maximum is beyond what the webhook can serve, the figures
        # above are mostly time spent waiting in line).
        own_per_client = max(1, int(our_rps / 2) // CLIENTS)
        latency_own = {}
        for name, port in (("nginx", nginx_port), ("kubegap-webhook", webhook_port)):
            log_file = os.path.join(tmp, f"latency-own-{name}.log")
            h2load(port, body_path, seconds=seconds, rps=own_per_client, log_file=log_file)
            latency_own[name] = percentiles(log_file)

        # Health and metrics while the review thread is saturated (closed loop).
        probes = probes_under_load(webhook_port, servers.health_ports[webhook.pid], body_path, seconds)

        # Memory: RSS after 100k reviews and after 1M (quick: 20k and 200k).
        first, total = (20_000, 200_000) if args.quick else (100_000, 1_000_000)
        h2load(webhook_port, body_path, requests=first)
        rss_first = rss_kib(webhook.pid)
        h2load(webhook_port, body_path, requests=total - first)
        rss_total = rss_kib(webhook.pid)
        servers.stop(webhook)
        servers.stop(nginx)

        # Threads: the webhook alone, 1, 2 and N I/O threads (h2load shares the cores).
        scaling = {}
        for threads in sorted({1, 2, len(cpus())}):
            proc, port = servers.start_webhook(threads)
            h2load(port, body_path, seconds=1)
            scaling[threads] = statistics.median(h2load(port, body_path, seconds=seconds)[0] for _ in range(3 if not args.quick else 1))
            servers.stop(proc)
    finally:
        servers.stop_all()

    print(f"\ntransport bench: {len(body)} B review ({os.path.basename(body_path)}), h2load --h1 -c{CLIENTS} -t1, "
          f"{rounds} alternating rounds of {seconds} s, medians; servers on core {servers.server_cores()}, "
          f"h2load on {servers.client_cores()}\n")
    print("| server (1 thread) | req/s | ratio to floor (target >= 0.90) |")
    print("|---|---|---|")
    print(f"| nginx, fixed response (floor) | {floor_rps:,.0f} | 1.00 |")
    print(f"| kubegap-webhook | {our_rps:,.0f} | {our_rps / floor_rps:.2f} |")
    print(f"\nrounds: nginx {', '.join(f'{x:,.0f}' for x in floor)}; webhook {', '.join(f'{x:,.0f}' for x in ours)}")
    print(f"\nlatency at {per_client * CLIENTS:,} req/s offered (half the floor's max; target p99 <= 1 ms):\n")
    print("| server | p50 | p99 | p99.9 | requests |")
    print("|---|---|---|---|---|")
    for name, (p50, p99, p999, n) in latency.items():
        print(f"| {name} | {p50 / 1000:.2f} ms | {p99 / 1000:.2f} ms | {p999 / 1000:.2f} ms | {n:,} |")
    print(f"\nlatency at {own_per_client * CLIENTS:,} req/s offered (half the webhook's own max):\n")
    print("| server | p50 | p99 | p99.9 | requests |")
    print("|---|---|---|---|---|")
    for name, (p50, p99, p999, n) in latency_own.items():
        print(f"| {name} | {p50 / 1000:.2f} ms | {p99 / 1000:.2f} ms | {p999 / 1000:.2f} ms | {n:,} |")
    print(f"\nhealth while the review thread is saturated: /healthz and /metrics p50 {probes[0]:.2f} ms, "
          f"p99 {probes[1]:.2f} ms, max {probes[2]:.2f} ms ({probes[3]} probes; they run on their own thread)")
    print(f"\nmemory: RSS {rss_first / 1024:.1f} MiB after {first:,} reviews, {rss_total / 1024:.1f} MiB after "
          f"{total:,} (growth {(rss_total - rss_first) / 1024:+.1f} MiB)")
    print("\nthreads (webhook alone, h2load on the same cores):\n")
    print("| I/O threads | req/s | vs 1 thread |")
    print("|---|---|---|")
    for threads, rps in scaling.items():
        print(f"| {threads} | {rps:,.0f} | {rps / scaling[1]:.2f} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
