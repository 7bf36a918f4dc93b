"""The Python client against a real `tunedb serve` on an ephemeral port.

Usage (CTest runs it): client_test.py TUNEDB_BINARY CLIENT_DIR
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

TUNEDB, CLIENT_DIR = sys.argv[1], sys.argv[2]
sys.path.insert(0, CLIENT_DIR)
from tunedb_client import TunedbClient, TunedbDatabase, TunedbError  # noqa: E402

TARGET = "llvm -mcpu=znver4 -num-cores=2"
BODY_LIMIT = 32 << 10  # small, so that a few hundred records need several requests
# A valid (tiny) trace in TVM's JSON layout.
TRACE = [[["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
          ["Vectorize", ["l2"], [], []]], []]


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        token_file = os.path.join(cls.dir.name, "token")
        with open(token_file, "w") as f:
            f.write("hunter2\n")
        cls.server = subprocess.Popen(
            [TUNEDB, "serve", "--db", os.path.join(cls.dir.name, "t.sqlite"), "--port", "0", "--token-file",
             token_file, "--quiet", "--body-limit", str(BODY_LIMIT)], stdout=subprocess.PIPE, text=True)
        line = cls.server.stdout.readline()
        cls.url = line.split("listening on ")[1].split()[0]
        cls.client = TunedbClient(cls.url, token="hunter2")

    @classmethod
    def tearDownClass(cls):
        cls.server.send_signal(signal.SIGTERM)
        out, _ = cls.server.communicate(timeout=30)
        assert cls.server.returncode == 0, cls.server.returncode
        assert "stopped" in out
        cls.dir.cleanup()

    def test_round_trip(self):
        c = self.client
        self.assertEqual(c.health()["status"], "ok")
        self.assertGreater(c.health()["max_body_bytes"], 0)
        w = c.commit_workload(spec="matmul:M=8,N=8,K=16")
        h = w["hash"]
        stored = int(re.search(r"^tunedb_records (\d+)$", c.metrics(), re.M).group(1))  # by the other tests
        self.assertEqual(c.workload(h)["name"], "matmul:M=8,N=8,K=16")
        added = c.commit_records([{"workload_hash": h, "target": TARGET, "trace": TRACE, "run_secs": [2e-6, 3e-6]}])
        self.assertEqual(added["added"], 1)
        best = c.best(h, TARGET)
        self.assertTrue(best["exact"])
        self.assertAlmostEqual(best["records"][0]["median_secs"], 2.5e-6)
        self.assertIn("sch.vectorize", best["records"][0]["script"])
        self.assertEqual(c.query(TARGET, spec="matmul:M=8,N=8,K=16")["workload_hash"], h)
        self.assertEqual(len(c.records(workload=h)["records"]), 1)
        self.assertIn(f"tunedb_records {stored + 1}\n", c.metrics())
        with self.assertRaises(TunedbError) as e:
            c.predict(h, [TRACE])
        self.assertEqual(e.exception.status, 409)
        with self.assertRaises(TunedbError) as e:
            c.predict(h, [TRACE], model=5)
        self.assertEqual(e.exception.status, 404)
        self.assertEqual(e.exception.message, "no model with id 5")

    def test_errors(self):
        with self.assertRaises(TunedbError) as e:
            TunedbClient(self.url).commit_workload(spec="matmul")
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(TunedbError) as e:
            self.client.workload("42")
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(TunedbError) as e:
            self.client.query(TARGET, spec="matmul:Q=1")
        self.assertEqual(e.exception.status, 400)
        self.assertIn("no parameter 'Q'", e.exception.message)

    def test_many_records_go_in_requests_within_the_servers_limit(self):
        c = self.client
        self.assertEqual(c.health()["max_body_bytes"], BODY_LIMIT)
        h = c.commit_workload(spec="matmul:M=8,N=8,K=8")["hash"]
        records = [{"workload_hash": h, "target": TARGET, "trace": TRACE, "run_secs": [1e-6 * (i + 1)]}
                   for i in range(400)]
        self.assertGreater(len(json.dumps({"records": records})), 3 * BODY_LIMIT)
        self.assertEqual(c.commit_records(records)["added"], 400)
        self.assertEqual(c.commit_records(records)["added"], 0)
        self.assertEqual(len(c.records(workload=h, limit=1000)["records"]), 400)
        # Read back and posted again (a copy made by hand) after the source
        # timed one of them again: its copy takes the timing, no record is added.
        copied = c.records(workload=h, limit=1000)["records"]
        copied[0]["run_secs"].append(5e-7)
        self.assertEqual(c.commit_records(copied), {"added": 0, "records_with_later_timings": 1})
        self.assertEqual(c.records(workload=h, limit=1)["records"][0]["run_secs"], [1e-6, 5e-7])
        when = copied[0]["created"]
        within = c.records(workload=h, limit=1000, created_from=when, created_to=when)["records"]
        self.assertEqual([r["id"] for r in within], [r["id"] for r in copied if r["created"] == when])
        with self.assertRaises(TunedbError) as e:  # the route itself still refuses a body beyond the limit
            c._call("POST", "/v1/records", body={"records": records})
        self.assertEqual(e.exception.status, 413)
        with self.assertRaises(ValueError):
            c.commit_records([dict(records[0], error="x" * BODY_LIMIT)])

    def test_tvm_database_methods(self):
        db = TunedbDatabase(self.client, TARGET)
        workload = {"spec": "matmul:M=4,N=4,K=4"}
        self.assertFalse(db.has_workload(workload))
        h = db.commit_workload(workload)["hash"]
        self.assertTrue(db.has_workload(workload))
        before = db.size()
        db.commit_tuning_record({"workload_hash": h, "trace": TRACE, "run_secs": [1e-6]})
        self.assertEqual(db.size(), before + 1)
        self.assertEqual(len(db.get_top_k(h, 5)), 1)
        self.assertEqual(db.get_top_k(workload, 1)[0]["workload_hash"], h)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
