"""The dashboard in a real browser: headless Chromium loads GET / from a real
`tunedb serve` and the test checks the DOM it rendered: the server's table,
tuning curve and trace script, and the live totals its script fetched.

Usage (CTest runs it): dashboard_test.py TUNEDB_BINARY CLIENT_DIR
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

TUNEDB, CLIENT_DIR = sys.argv[1], sys.argv[2]
sys.path.insert(0, CLIENT_DIR)
from tunedb_client import TunedbClient  # noqa: E402

TARGET = "llvm -mcpu=znver4 -num-cores=2"
TRACE = [[["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
          ["Vectorize", ["l2"], [], []]], []]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("no chromium on PATH: scripts/install-deps.sh installs Debian's chromium package")


class DashboardTest(unittest.TestCase):
    def test_browser_renders_the_dashboard(self):
        with tempfile.TemporaryDirectory() as d:
            server = subprocess.Popen([TUNEDB, "serve", "--db", os.path.join(d, "t.sqlite"), "--port", "0", "--quiet"],
                                      stdout=subprocess.PIPE, text=True)
            try:
                url = server.stdout.readline().split("listening on ")[1].split()[0]
                client = TunedbClient(url)
                h = client.commit_workload(spec="matmul:M=64,N=64,K=64")["hash"]
                client.commit_records([{"workload_hash": h, "target": TARGET, "trace": TRACE, "run_secs": [t]}
                                       for t in (4e-5, 2e-5, 3e-5, 1e-5)])
                profile = os.path.join(d, "profile")
                dom = subprocess.run(
                    [find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--user-data-dir=" + profile, "--virtual-time-budget=5000", "--dump-dom", url + "/"],
                    capture_output=True, text=True, timeout=90).stdout
            finally:
                server.send_signal(signal.SIGTERM)
                server.communicate(timeout=30)
        self.assertIn("matmul:M=64,N=64,K=64", dom)
        self.assertIn("<svg", dom)                       # the tuning curve
        self.assertIn("4 records", dom)                  # its x axis
        self.assertIn("sch.vectorize", dom)              # the best trace script
        self.assertIn("live: 1 workloads, 4 records", dom)  # written by the page's script after its fetch


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
