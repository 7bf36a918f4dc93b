"""A client of tunedb's REST server (``tunedb serve``), standard library only.

    from tunedb_client import TunedbClient, TunedbDatabase
    client = TunedbClient("http://127.0.0.1:8080", token="...")
    hash = client.query(spec="matmul:M=512,N=512,K=512", target=TARGET)["workload_hash"]
    best = client.best(hash, target=TARGET, k=1)["records"][0]
    print(best["gflops"], best["script"])

``TunedbDatabase`` has the method names of TVM MetaSchedule's Database
(has_workload, commit_workload, commit_tuning_record, get_top_k,
get_all_tuning_records, size), so a TVM user can wrap it in
``ms.database.PyDatabase``; it speaks tunedb's data (workload specs or
hashes, records as dicts), and converting TVM objects to those is the
wrapper's job. Every route is described in docs/API.md.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["TunedbClient", "TunedbDatabase", "TunedbError"]


class TunedbError(Exception):
    """An error answer of the server: ``status`` and the server's message."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class TunedbClient:
    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._limits = None  # the server's write limits, from its health route when first needed

    # -- plumbing --------------------------------------------------------
    def _call(self, method, path, query=None, body=None):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode()
                return json.loads(text) if response.headers.get_content_type() == "application/json" else text
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                message = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                message = text
            raise TunedbError(e.code, message) from None

    @staticmethod
    def _workload_body(spec=None, program=None, text=None):
        given = [(k, v) for k, v in (("spec", spec), ("program", program), ("text", text)) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of spec, program or text")
        return dict(given)

    # -- routes ------------------------------------------------------------
    def health(self):
        return self._call("GET", "/v1/health")

    def workloads(self, limit=100, after=None):
        return self._call("GET", "/v1/workloads", {"limit": limit, "after": after})

    def workload(self, workload_hash):
        return self._call("GET", "/v1/workloads/" + urllib.parse.quote(workload_hash))

    def best(self, workload_hash, target, k=1):
        return self._call("GET", f"/v1/workloads/{urllib.parse.quote(workload_hash)}/best", {"target": target, "k": k})

    def query(self, target, k=1, spec=None, program=None, text=None):
        body = self._workload_body(spec, program, text)
        body.update({"target": target, "k": k})
        return self._call("POST", "/v1/query", body=body)

    def records(self, workload=None, target=None, status=None, limit=100, after=None, created_from=None,
                created_to=None):
        """GET /v1/records; created_from and created_to (seconds since 1970, given together) keep the records
        committed between them."""
        return self._call("GET", "/v1/records",
                          {"workload": workload, "target": target, "status": status, "limit": limit, "after": after,
                           "created_from": created_from, "created_to": created_to})

    def commit_workload(self, spec=None, program=None, text=None):
        return self._call("POST", "/v1/workloads", body=self._workload_body(spec, program, text))

    def commit_records(self, records):
        """POST /v1/records. More records than the server takes in one request
        (the limits its health route gives) go in several, each committed on
        its own; the answer's "added" counts them all. After a failure part
        way, committing the same records again adds only the rest: the server
        skips duplicates. Records read from another server keep their
        "created"; one the server holds already, timed again there since,
        gives its copy the later timings instead of a second record, which
        "records_with_later_timings" counts."""
        if self._limits is None:
            health = self.health()
            self._limits = (health.get("max_body_bytes", 8 << 20), health.get("max_records_per_post", 10000))
        max_bytes, max_records = self._limits
        wrapper = len('{"records": []}')
        added, later, chunk, chunk_bytes = 0, 0, [], wrapper

        def send():
            nonlocal added, later, chunk, chunk_bytes
            if chunk:
                answer = self._call("POST", "/v1/records", body={"records": chunk})
                added += answer["added"]
                later += answer.get("records_with_later_timings", 0)  # an older server does not say
            chunk, chunk_bytes = [], wrapper

        for record in records:
            size = len(json.dumps(record).encode()) + 2  # and ", "
            if wrapper + size > max_bytes:
                raise ValueError(f"a record of {size} bytes is more than the server takes in one request ({max_bytes})")
            if chunk_bytes + size > max_bytes or len(chunk) >= max_records:
                send()
            chunk.append(record)
            chunk_bytes += size
        send()
        return {"added": added, "records_with_later_timings": later}

    def predict(self, workload_hash, traces, model=None):
        """Cost-model scores of traces; model is a stored model's id (None: the one tuning sessions start from)."""
        body = {"workload": workload_hash, "traces": list(traces)}
        if model is not None:
            body["model"] = model
        return self._call("POST", "/v1/predict", body=body)

    def metrics(self):
        return self._call("GET", "/metrics")


class TunedbDatabase:
    """TVM MetaSchedule's Database methods over a tunedb server, for one target.

    A workload is a dict {"spec": ...} / {"program": ...} / {"text": ...} or a
    tunedb workload hash; a record is a dict with workload_hash, trace (TVM's
    trace JSON), run_secs and optionally status and error.
    """

    def __init__(self, client, target):
        self.client = client
        self.target = target

    def _hash(self, workload):
        if isinstance(workload, str):
            return workload
        return self.client.query(self.target, **workload)["workload_hash"]

    def has_workload(self, workload):
        try:
            self.client.workload(self._hash(workload))
            return True
        except TunedbError as e:
            if e.status == 404:
                return False
            raise

    def commit_workload(self, workload):
        if isinstance(workload, str):
            return self.client.workload(workload)
        return self.client.commit_workload(**workload)

    def commit_tuning_record(self, record):
        record = dict(record)
        record.setdefault("target", self.target)
        return self.client.commit_records([record])

    def get_top_k(self, workload, top_k):
        return self.client.best(self._hash(workload), self.target, k=top_k)["records"]

    def get_all_tuning_records(self):
        out, after = [], None
        while True:
            page = self.client.records(target=self.target, limit=1000, after=after)
            out.extend(page["records"])
            after = page["next_after"]
            if after is None:
                return out

    def size(self):
        return len(self.get_all_tuning_records())
