"""End to end for `./dev demo` (issue 12): starts the demo as the script does, follows the
kubectl steps it prints, in order, exactly as printed, and checks that they show all four
checks (and that the PDB step turns disruption-budget off), that the canary is explained,
and that Ctrl-C stops everything and keeps the audit log with the findings.

    python3 tests/e2e/test_demo.py BIN_DIR WEBHOOK_BINARY SOURCE_DIR
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import WEBHOOK_NAME, log  # noqa: E402

BIN_DIR, WEBHOOK, SOURCE = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)
WARNING = re.compile(r"^Warning: kubegap/([a-z-]+): ", re.M)
ALL_CHECKS = {"checkpoint-volume", "disruption-budget", "zone-spread", "gpu-health-tolerations"}


class Demo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kubegap-demo-test-")
        cls.audit_log = os.path.join(cls.tmp, "demo-audit.log")
        env = dict(os.environ, KUBEGAP_DEMO_AUDIT_LOG=cls.audit_log)
        cls.stderr = open(os.path.join(cls.tmp, "demo.err"), "w+")
        cls.demo = subprocess.Popen(
            [sys.executable, os.path.join(SOURCE, "tests", "e2e", "controlplane.py"), "demo", BIN_DIR, WEBHOOK, SOURCE],
            stdout=subprocess.PIPE, stderr=cls.stderr, text=True, env=env)
        lines = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = cls.demo.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Ctrl-C stops everything"):
                break
        cls.message = "".join(lines)
        log("demo printed:\n" + cls.message)

    @classmethod
    def tearDownClass(cls):
        # SIGTERM, not SIGKILL: the demo's handler stops etcd, kube-apiserver and the
        # webhook (they run in their own sessions and would outlive a killed parent).
        if cls.demo.poll() is None:
            cls.demo.terminate()
            try:
                cls.demo.wait(60)
            except subprocess.TimeoutExpired:
                cls.demo.kill()
                cls.demo.wait()

    def printed(self, pattern):
        m = re.search(pattern, self.message, re.M)
        self.assertIsNotNone(m, f"the demo did not print /{pattern}/:\n{self.message}")
        return m.group(1)

    def run_step(self, command):
        """A printed `kubectl ...` line, run as the user would after the printed export
        and alias."""
        args = shlex.split(command)
        self.assertEqual(args[0], "kubectl")
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        return subprocess.run([self.kubectl, *args[1:]], capture_output=True, text=True, env=env, timeout=60)

    def pdbs_in_view(self):
        with urllib.request.urlopen(self.metrics, timeout=5) as r:
            m = re.search(r'^kubegap_cluster_view_objects\{resource="poddisruptionbudgets"\} (\S+)$',
                          r.read().decode(), re.M)
        return float(m.group(1)) if m else 0

    def test_printed_steps_show_every_check_then_ctrl_c_keeps_the_audit_log(self):
        self.kubeconfig = self.printed(r"^  export KUBECONFIG=(\S+)$")
        self.kubectl = self.printed(r"^  alias kubectl=(\S+)$")
        self.metrics = self.printed(r"metrics (http://\S+/metrics)\)")
        self.assertIn("kubegap-canary/canary is the demo's own start-up probe", self.message)
        steps = re.findall(r"^  (kubectl \S.*)$", self.message, re.M)
        self.assertEqual(len(steps), 7, steps)

        # What each printed step must show, by the file it applies (and dry run or not).
        want = {
            ("training-pod-gaps.yaml", True): ALL_CHECKS,
            ("training-pod-gaps.yaml", False): ALL_CHECKS,
            ("training-pod-good.yaml", True): {"disruption-budget"},
            ("pdb-good.yaml", False): set(),
            ("training-pod-good.yaml", False): set(),
            ("crds-minimal.yaml", False): set(),
            ("pytorchjob-gaps.yaml", False): ALL_CHECKS,
        }
        # docs/getting-started.md shows the same steps (relative paths) and the first step's warnings.
        with open(os.path.join(SOURCE, "docs", "getting-started.md")) as f:
            readme = f.read()
        examples = os.path.join(SOURCE, "manifests", "examples") + "/"
        for command in steps:
            self.assertIn("  " + command.replace(examples, "manifests/examples/") + "\n", readme,
                          "docs/getting-started.md's demo steps differ from what ./dev demo prints")
        readme_first = re.search(r"^\$ kubectl apply --dry-run=server -f manifests/examples/training-pod-gaps.yaml\n"
                                 r"((?:Warning: .*\n)+)", readme, re.M)
        self.assertIsNotNone(readme_first, "docs/getting-started.md: no captured output of the demo's first step")
        seen = set()
        for command in steps:
            key = (os.path.basename(command.split()[-1]), "--dry-run=server" in command)
            self.assertIn(key, want, f"an unexpected step: {command}")
            if key == ("training-pod-good.yaml", False):
                # A person types slower than the view syncs; the test waits for it.
                deadline = time.monotonic() + 15
                while self.pdbs_in_view() < 1 and time.monotonic() < deadline:
                    time.sleep(0.2)
            r = self.run_step(command)
            self.assertEqual(r.returncode, 0, f"{command}:\n{r.stderr}")
            self.assertNotIn("unchanged", r.stdout, f"{command} reached nothing new:\n{r.stdout}")
            checks = set(WARNING.findall(r.stderr))
            self.assertEqual(checks, want[key], f"{command}:\n{r.stderr}")
            if key[0] == "pytorchjob-gaps.yaml":
                self.assertIn("replica Master, replica Worker", r.stderr)
            if command == steps[0]:
                self.assertEqual(readme_first.group(1), "".join(l + "\n" for l in r.stderr.splitlines()
                                                                   if l.startswith("Warning: ")),
                                 "docs/getting-started.md's captured warnings differ from the demo's first step")
            seen |= checks
            log(f"{command.split()[-1]}: {sorted(checks)}")
        self.assertEqual(seen, ALL_CHECKS)

        # Ctrl-C: everything stops, and the audit log stays with the stored pod's findings.
        self.demo.send_signal(signal.SIGINT)
        # The control plane's handler stops every process and exits 128 + SIGINT.
        self.assertEqual(self.demo.wait(60), 128 + signal.SIGINT)
        self.stderr.seek(0)
        err = self.stderr.read()
        self.assertIn(f"the audit log is kept in {self.audit_log}", err)
        annotations = {}
        with open(self.audit_log) as f:
            for line in f:
                e = json.loads(line)
                ref = e.get("objectRef", {})
                if (ref.get("name") == "llm-pretrain-gaps" and e.get("verb") == "create"
                        and e.get("stage") == "ResponseComplete" and not e.get("requestURI", "").count("dryRun")):
                    annotations = e.get("annotations", {})
        prefix = WEBHOOK_NAME + "/"
        keys = {k[len(prefix):] for k in annotations if k.startswith(prefix)}
        self.assertEqual(keys & ALL_CHECKS, ALL_CHECKS, annotations)
        for check in ALL_CHECKS:  # findings, with their cases, not "not evaluated"
            self.assertIn("cases: ", annotations[prefix + check], annotations)
        apiservers = subprocess.run(["pgrep", "-f", self.kubeconfig.rsplit("/", 1)[0]], capture_output=True, text=True)
        self.assertEqual(apiservers.stdout.strip(), "", "a process of the demo still runs after Ctrl-C")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
