"""A real `tunedb serve` against mutated HTTP requests.

Valid requests to every route are mutated at random (bytes cut, inserted and
changed; header and body fragments spliced in), with a fixed seed, and sent
over raw sockets. Each must get a well-formed answer with a 2xx or 4xx
status, or a closed connection (a request cut short); never a 5xx. The
server must stay healthy throughout, stop cleanly, and leave a database
that `tunedb db check` finds sound.

Usage (CTest runs it): malformed_http_test.py TUNEDB_BINARY
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

TUNEDB = sys.argv[1]
TARGET = "llvm -mcpu=znver4 -num-cores=2"
TRACE = [[["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
          ["Vectorize", ["l2"], [], []]], []]
CASES = 1000


def request(method, path, body=None):
    body = body or ""
    return "%s %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (method, path, len(body.encode()), body)


def exchange(port, data):
    """Sends `data`, half-closes, and returns what the server answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        answer = b""
        while True:
            try:
                chunk = c.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
        return answer


class MalformedHttpTest(unittest.TestCase):
    def test_mutated_requests_get_client_errors_and_the_server_stays_sound(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "t.sqlite")
            server = subprocess.Popen([TUNEDB, "serve", "--db", db, "--port", "0", "--quiet"],
                                      stdout=subprocess.PIPE, text=True)
            port = int(server.stdout.readline().split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            made = exchange(port, request("POST", "/v1/workloads", json.dumps({"spec": "matmul:M=8,N=8,K=16"})).encode())
            self.assertIn(b" 201 ", made.split(b"\r\n")[0])
            h = json.loads(made.split(b"\r\n\r\n", 1)[1])["hash"]
            record = {"workload_hash": h, "target": TARGET, "trace": TRACE, "run_secs": [2e-6]}
            templates = [
                request("GET", "/v1/health"),
                request("GET", "/v1/workloads?limit=2&after=0"),
                request("GET", "/v1/workloads/%s" % h),
                request("GET", "/v1/workloads/%s/best?target=%s&k=3" % (h, TARGET.replace(" ", "%20"))),
                request("GET", "/v1/records?workload=%s&status=ok&limit=1" % h),
                request("POST", "/v1/query", json.dumps({"spec": "matmul:M=8,N=8,K=16", "target": TARGET, "k": 2})),
                request("POST", "/v1/query", json.dumps({"text": "input A: f32[4]\nB[i] = A[i] * 2.0\n",
                                                         "target": TARGET})),
                request("POST", "/v1/records", json.dumps({"records": [record]})),
                request("POST", "/v1/workloads", json.dumps({"spec": "matmul:M=4,N=4,K=4"})),
                request("POST", "/v1/predict", json.dumps({"workload_hash": h, "target": TARGET, "traces": [TRACE]})),
                request("POST", "/v1/sessions", json.dumps({"command": "x", "target": TARGET})),
                request("GET", "/v1/stats"),
                request("GET", "/v1/models"),
                request("GET", "/"),
            ]
            pieces = ["\r\n", "\r\n\r\n", ":", " ", "%", "%ff", "%00", "?", "&", "=", "{", "}", "[", "]", "\"",
                      ",", "null", "-1", "1e999", "99999999999999999999", "\x00", "\xff",
                      "Content-Length: 99999999999\r\n", "Transfer-Encoding: chunked\r\n",
                      "Expect: 100-continue\r\n", "/..", "//"]
            rng = random.Random(5)
            statuses = {}
            try:
                for case in range(CASES):
                    text = list(rng.choice(templates))
                    for _ in range(rng.randint(1, 4)):
                        at = rng.randrange(len(text)) if text else 0
                        op = rng.random()
                        if op < 0.3:
                            del text[at:at + rng.randint(1, 8)]
                        elif op < 0.6:
                            text[at:at] = list(rng.choice(pieces))
                        elif op < 0.8 and text:
                            text[at] = chr(rng.randrange(256))
                        else:
                            text = text[:at]
                    data = "".join(text).encode("latin-1")
                    answer = exchange(port, data)
                    if answer:
                        self.assertTrue(answer.startswith(b"HTTP/1.1 "), (data, answer[:200]))
                        status = int(answer[9:12])
                        self.assertLess(status, 500, (data, answer[-300:]))
                    else:
                        status = None
                    statuses[status] = statuses.get(status, 0) + 1
                    if case % 50 == 0:
                        self.assertIn(b" 200 ", exchange(port, request("GET", "/v1/health").encode())[:20])
            finally:
                server.send_signal(signal.SIGTERM)
                server.communicate(timeout=30)
            self.assertEqual(server.returncode, 0)
            # Both kinds of answer occur, or the mutations test nothing.
            self.assertGreater(statuses.get(400, 0), CASES // 2, statuses)
            self.assertGreater(sum(n for s, n in statuses.items() if s and s < 300), 20, statuses)
            check = subprocess.run([TUNEDB, "db", "check", "--db", db], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            self.assertIn("no problems found", check.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
