"""The webhook service under hostile HTTP, against the real ``metacompress webhooks serve`` on
loopback: oversized bodies (declared and streamed), a queue file locked by another process,
deeply nested JSON, a client trickling its headers, and more half-open connections than the
process has file descriptors for.

One service for the module, started in a subprocess with ``--queue-only`` (deliveries are
recorded, no job runs, no tracking server is needed), short time limits (2 s per request,
1 s idle) and an open-file limit of 256. The body limit is checked with the kernel's peak
resident size of the service (``VmHWM``, reset through ``/proc/<pid>/clear_refs``).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from mlflow_metacompress.webhooks.signature import sign

REPO = Path(__file__).resolve().parents[2]
SECRET = "wh-http-secret"
NOFILE = 256
MiB = 1 << 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _limit_open_files() -> None:  # runs in the service's child process, before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


class Service:
    """The running service: its URL, process and queue file."""

    def __init__(self, tmp: Path) -> None:
        (tmp / "data.jsonl").write_text('{"func": "int f(){}", "target": 0}\n')
        config = {
            "tracking_uri": "http://127.0.0.1:9",
            "queue": "queue.sqlite",
            "models": {"gated-*": {"data": "data.jsonl", "teacher": "models:/t/1"}},
        }
        (tmp / "gates.yaml").write_text(yaml.safe_dump(config))
        self.queue, self.port, self.log = tmp / "queue.sqlite", _free_port(), tmp / "service.log"
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "METACOMPRESS_WEBHOOK_SECRET": SECRET,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        cmd = [
            sys.executable,
            "-m",
            "mlflow_metacompress.cli",
            "webhooks",
            "serve",
            "--config",
            str(tmp / "gates.yaml"),
            "--port",
            str(self.port),
            "--queue-only",
            "--request-timeout",
            "2",
            "--idle-timeout",
            "1",
        ]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_limit_open_files
            )

    def wait_up(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if requests.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                time.sleep(0.2)
        raise AssertionError(f"the service did not answer /health within {timeout} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def peak_rss_reset(self) -> None:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS

    def status(self, key: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(key)

    def open_files(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def post(
        self, body: bytes, signed: bool = True, delivery_id: str | None = None, timeout: float = 10
    ) -> requests.Response:
        delivery_id = delivery_id or str(uuid.uuid4())
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery_id, "X-MLflow-Timestamp": stamp}
        if signed:
            headers["X-MLflow-Signature"] = sign(SECRET, delivery_id, stamp, body)
        return requests.post(f"{self.url}/webhook", data=body, headers=headers, timeout=timeout)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = Service(tmp_path_factory.mktemp("webhooks-http"))
    try:
        svc.wait_up()
        yield svc
    finally:
        svc.stop()


def _created(name: str, version: str = "1") -> bytes:
    return json.dumps(
        {
            "entity": "model_version",
            "action": "created",
            "timestamp": "2026-01-01T00:00:00+00:00",
            "data": {"name": name, "version": version, "tags": {}},
        }
    ).encode()


def _timed(call):
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


def _response(sock: socket.socket, timeout: float) -> bytes:
    """What the service sent before closing (or within ``timeout``)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


# ------------------------------------------------------------------------------- body size
@pytest.mark.slow
def test_declared_oversized_body_is_refused_before_it_is_sent(service):
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (50 * MiB)
        )
        answer, elapsed = _timed(lambda: _response(sock, 5))
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"connection: close" in answer.lower() and elapsed < 2


def test_streamed_oversized_body_is_cut_off_without_buffering_it(service):
    service.peak_rss_reset()
    before = service.status("VmHWM")
    sent, chunk = 0, b"x" * MiB
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            while sent < 50 * MiB:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _response(sock, 5)
    grown = service.status("VmHWM") - before
    print(f"50 MiB streamed: service closed after {sent / MiB:.0f} MiB sent; peak RSS +{grown / MiB:.1f} MiB")
    assert sent < 50 * MiB, "the service read the whole 50 MiB body"
    assert grown < 16 * MiB, f"the service's peak memory grew by {grown / MiB:.0f} MiB"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413 "), answer[:200]  # a reset may drop the answer
    assert requests.get(f"{service.url}/health", timeout=2).json()["status"] == "ok"


# ----------------------------------------------------------------------------- JSON bodies
@pytest.mark.parametrize(
    "body, message",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"entity": "model_version", "action": "created", "data": {"version": ' + b"1" * 5000 + b"}}", "not JSON"),
        (b'{"entity": "model_version", "action": "created", "data": {"name": "gated-x", "version": "1"}', "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
    ],
)
def test_signed_but_unparseable_json_is_400(service, body, message):
    response = service.post(body)
    assert response.status_code == 400 and message in response.json()["error"], response.text[:300]


# ------------------------------------------------------------------------ a locked queue file
@pytest.mark.slow
def test_queue_locked_by_another_process_stalls_nothing_and_deliveries_get_503(service):
    holder = sqlite3.connect(service.queue, isolation_level=None, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")  # another process holding the queue's write lock
    delivery, pending = str(uuid.uuid4()), {}
    try:
        sender = threading.Thread(
            target=lambda: pending.update(
                r=_timed(lambda: service.post(_created("gated-locked"), delivery_id=delivery))
            )
        )
        sender.start()
        time.sleep(0.3)  # the delivery is now waiting for the queue
        health, t_health = _timed(lambda: requests.get(f"{service.url}/health", timeout=5))
        unsigned, t_unsigned = _timed(lambda: service.post(_created("gated-locked"), signed=False, timeout=5))
        unknown, t_unknown = _timed(lambda: requests.get(f"{service.url}/no-such-path", timeout=5))
        sender.join(15)
        (queued, t_queued) = pending["r"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    print(
        f"queue locked: /health {t_health * 1000:.0f} ms, 401 {t_unsigned * 1000:.0f} ms, "
        f"404 {t_unknown * 1000:.0f} ms, delivery 503 after {t_queued:.1f} s"
    )
    assert health.status_code == 200 and health.json()["status"] in ("ok", "degraded") and t_health < 1
    assert unsigned.status_code == 401 and t_unsigned < 1
    assert unknown.status_code == 404 and t_unknown < 1
    assert queued.status_code == 503 and queued.headers["Retry-After"].isdigit() and t_queued < 5
    retried = service.post(_created("gated-locked"), delivery_id=delivery)  # MLflow's retry, same id
    assert retried.status_code == 200 and retried.json()["status"] == "queued", retried.text


# -------------------------------------------------------------------- slow and idle clients
@pytest.mark.slow
def test_trickled_headers_are_cut_off_at_the_request_deadline(service):
    request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    start, sent = time.monotonic(), 0
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        try:
            while sent < len(request) and time.monotonic() - start < 8:
                sock.sendall(request[sent : sent + 1])  # one byte every 0.2 s: the idle timeout never fires
                sent += 1
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _response(sock, 2)
        closed_after = time.monotonic() - start
    assert sent < len(request) and 1.5 < closed_after < 5, (sent, closed_after)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer[:200]


@pytest.mark.slow
def test_silent_connection_is_closed_at_the_idle_timeout(service):
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        answer, elapsed = _timed(lambda: _response(sock, 6))
    assert answer.startswith(b"HTTP/1.1 408 ") and 0.8 < elapsed < 3, (answer[:100], elapsed)


def test_half_open_connections_beyond_the_open_file_limit_leave_health_reachable(service):
    baseline = service.open_files()
    socks = []
    try:
        for _ in range(NOFILE + 50):  # more than the service has file descriptors for
            sock = socket.create_connection(("127.0.0.1", service.port))
            sock.sendall(b"GET /health HTTP/1.1\r\n")  # a request that never ends
            socks.append(sock)
        health, elapsed = _timed(lambda: requests.get(f"{service.url}/health", timeout=3))
        peak = service.open_files()
    finally:
        for sock in socks:
            sock.close()
    print(f"{len(socks)} half-open connections: /health in {elapsed * 1000:.0f} ms; service fds {baseline} -> {peak}")
    assert health.status_code == 200 and elapsed < 1
    assert peak < NOFILE - 64  # the cap keeps descriptors free: accept() never hits EMFILE
    deadline = time.monotonic() + 5
    while service.open_files() > baseline + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert service.open_files() <= baseline + 2  # every connection was closed again
