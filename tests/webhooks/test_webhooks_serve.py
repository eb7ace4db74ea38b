"""``metacompress webhooks serve`` refusing to start (one line, exit 2, before any worker starts
or "listening" is logged), and the queue's bounded waits: a queue file locked by another
connection makes writers give up in time, never readers, and never kills a worker."""

from __future__ import annotations

import re
import socket
import sqlite3
import threading
import time

import pytest
import yaml

from mlflow_metacompress.cli import main
from mlflow_metacompress.webhooks.queue import EVALUATE, JobQueue, JobSpec, QueueBusyError
from mlflow_metacompress.webhooks.worker import Worker

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


@pytest.fixture
def serve(tmp_path, monkeypatch, caplog):
    """Run ``webhooks serve`` in-process; reaching uvicorn fails the test instead of serving.
    The tracking server named in the config is never contacted."""
    import mlflow
    import uvicorn

    from mlflow_metacompress.webhooks import service

    def never(*args, **kwargs):
        raise AssertionError("the service started serving")

    monkeypatch.setattr(uvicorn.Server, "run", never)
    monkeypatch.setattr(uvicorn.Server, "serve", never)
    monkeypatch.setenv("METACOMPRESS_WEBHOOK_SECRET", "s3cret")
    for key in service._HTTP_DEFAULTS:  # serve sets them in os.environ
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "data.jsonl").write_text('{"func": "int f(){}", "target": 0}\n')

    def run(*args: str, queue: str | None = None) -> int:
        config = {
            "tracking_uri": "http://127.0.0.1:9",
            "models": {"m": {"data": "data.jsonl", "teacher": "models:/t/1"}},
        }
        if queue is not None:
            config["queue"] = queue
        (tmp_path / "gates.yaml").write_text(yaml.safe_dump(config))
        with caplog.at_level("INFO"):
            return main(["webhooks", "serve", "--config", str(tmp_path / "gates.yaml"), *args])

    yield run
    mlflow.set_tracking_uri(None)  # serve points MLflow at the config's server
    mlflow.set_registry_uri(None)


def _make_folder(tmp_path):
    (tmp_path / "q").mkdir()
    return "q"


def _make_text_file(tmp_path):
    (tmp_path / "q.sqlite").write_text("job,state\n" * 200)
    return "q.sqlite"


@pytest.mark.parametrize(
    "make_queue, args, message",
    [
        (_make_folder, [], r"queue .*/q: is a folder; give the path of a sqlite file"),
        (_make_text_file, [], r"queue .*/q\.sqlite: cannot use it as the job queue \(file is not a database\)"),
        (None, ["--port", "99999"], r"--port 99999: not a TCP port \(0-65535\)"),
        (None, ["--port", "-1"], r"--port -1: not a TCP port"),
        (None, ["--host", "no-such-host.invalid", "--port", "0"], r"--host 'no-such-host\.invalid': not an address"),
        (None, ["--host", "192.0.2.1", "--port", "0"], r"cannot listen on 192\.0\.2\.1:0: Cannot assign requested"),
        (None, ["--request-timeout", "0"], r"--request-timeout: must be positive, got 0"),
        (None, ["--max-connections", "-3"], r"--max-connections: must be positive, got -3"),
    ],
)
def test_serve_refuses_to_start_in_one_line(serve, tmp_path, capsys, caplog, make_queue, args, message):
    queue = make_queue(tmp_path) if make_queue else None
    assert serve(*args, queue=queue) == 2
    err = capsys.readouterr().err
    assert err.startswith("metacompress webhooks serve: error: ") and err.count("\n") == 1, err
    assert re.search(message, err), err
    assert "listening" not in caplog.text
    assert not [t for t in threading.enumerate() if t.name.startswith("metacompress-")]  # no worker started


def test_serve_on_a_port_in_use_fails_before_listening(serve, busy_port, capsys, caplog):
    assert serve("--port", str(busy_port)) == 2
    err = capsys.readouterr().err
    assert (
        err == f"metacompress webhooks serve: error: cannot listen on 127.0.0.1:{busy_port}: Address already in use\n"
    )
    assert "listening" not in caplog.text
    assert not [t for t in threading.enumerate() if t.name.startswith("metacompress-")]


# ------------------------------------------------------------------------ bounded queue waits
@pytest.fixture
def locked(tmp_path):
    """A queue file and a function locking it from another connection (BEGIN EXCLUSIVE)."""
    path = tmp_path / "q.sqlite"
    holders = []

    def lock() -> sqlite3.Connection:
        holder = sqlite3.connect(path, isolation_level=None, timeout=0)
        holder.execute("BEGIN EXCLUSIVE")
        holders.append(holder)
        return holder

    yield path, lock
    for holder in holders:
        holder.close()


def test_a_locked_queue_file_makes_writers_give_up_in_time_and_never_blocks_readers(locked):
    path, lock = locked
    queue = JobQueue(path)
    spec = [JobSpec(EVALUATE, "m", "1")]
    holder, waited = lock(), {}
    writer = threading.Thread(target=lambda: waited.update(ids=queue.record_delivery("d0", "e", [], timeout_s=10)))
    writer.start()  # waits for the file, holding the queue's write lock in this process
    time.sleep(0.2)
    start = time.monotonic()
    assert queue.counts(timeout_s=0.5)["deliveries"] == 0  # WAL readers pass writers, here and elsewhere
    assert time.monotonic() - start < 0.3
    start = time.monotonic()
    with pytest.raises(QueueBusyError, match="busy in this process"):
        queue.record_delivery("d1", "model_version.created", spec, timeout_s=0.4)
    assert 0.3 < time.monotonic() - start < 2
    holder.execute("ROLLBACK")
    writer.join(10)
    assert waited == {"ids": []}
    holder = lock()
    start = time.monotonic()
    with pytest.raises(QueueBusyError, match="locked by another connection"):
        queue.record_delivery("d1", "model_version.created", spec, timeout_s=0.4)
    assert 0.3 < time.monotonic() - start < 2
    holder.execute("ROLLBACK")
    assert queue.record_delivery("d1", "model_version.created", spec, timeout_s=1) == [1]
    queue.close()


def test_worker_outlives_a_queue_locked_past_its_wait(locked):
    path, lock = locked
    queue = JobQueue(path, timeout_s=0.2)
    queue.record_delivery("d", "e", [JobSpec(EVALUATE, "m", "1")])
    holder = lock()
    ran, stop, wake = [], threading.Event(), threading.Event()
    worker = Worker(
        queue,
        (EVALUATE,),
        lambda job: (ran.append(job.id), ("done", "ok"))[1],
        None,
        "sqlite:///unused.db",
        wake,
        stop,
        poll_s=0.1,
    )
    worker.start()
    try:
        time.sleep(1.0)  # five waits of 0.2 s have failed
        assert worker.is_alive() and ran == []
        holder.execute("ROLLBACK")
        deadline = time.monotonic() + 10
        while queue.counts()["done"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ran == [1] and queue.counts()["done"] == 1
    finally:
        stop.set()
        wake.set()
        worker.join(5)
        queue.close()
