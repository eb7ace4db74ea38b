"""The webhook service's persistent job queue and delivery ledger (one sqlite file).

Two tables:

- ``deliveries``: every accepted ``X-MLflow-Delivery-Id``. A delivery id is recorded in the
  same transaction as the jobs it creates, and the HTTP answer is sent after the commit,
  so a delivery is either fully queued or not at all, and a replay (MLflow's HTTP
  retries, a restart, an attacker re-sending a captured request) finds its id and
  creates nothing.
- ``jobs``: ``evaluate`` jobs (one per model version at most, enforced by a unique index,
  so a second event for a version that is queued, being judged or judged starts nothing)
  and ``guard`` jobs (one per alias event).

Job states: ``queued`` → ``running`` → ``done`` | ``error`` | ``waiting`` (no teacher yet;
revived, like ``error``, by a new ``metacompress.teacher`` tag) | ``skipped``. A job found ``running`` when the
queue is opened was interrupted by a crash or kill and goes back to ``queued``. A job
whose tracking server was unreachable goes back to ``queued`` with a ``not_before`` time
(backoff), never dropped.

Every access waits a bounded time for the queue: :class:`QueueBusyError` (a
``sqlite3.OperationalError``) when another thread or process holds it longer. The HTTP
handlers wait a second or two (:mod:`.app`; a delivery then answers 503 with
``Retry-After``, which MLflow retries), the workers :data:`WORKER_WAIT_S`. Reads use a
deferred transaction on a connection of their own, so in WAL mode they go through while a
writer (this process's or another's) holds or waits for the write lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

EVALUATE = "evaluate"
GUARD = "guard"
WORKER_WAIT_S = 30.0  # the workers' wait for the queue; the HTTP handlers pass their own, shorter one
STATES = ("queued", "running", "done", "error", "waiting", "skipped")
REVIVABLE = ("waiting", "error")  # a new teacher tag re-queues a version never judged passed/failed

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    received_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    version TEXT NOT NULL,
    alias TEXT,
    delivery_id TEXT,
    state TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS one_evaluation_per_version ON jobs (model, version) WHERE kind = 'evaluate';
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, not_before, id);
"""


class QueueFileError(ValueError):
    """The queue path is not a usable sqlite file (a folder, another kind of file); names the path."""


class QueueBusyError(sqlite3.OperationalError):
    """The queue was held by another thread or process for longer than the caller's wait."""


@dataclass(frozen=True)
class JobSpec:
    """A job a delivery asks for. ``revive`` re-queues an ``evaluate`` job left ``waiting`` or ``error``."""

    kind: str
    model: str
    version: str
    alias: str | None = None
    revive: bool = False


@dataclass(frozen=True)
class Job:
    """One row of the ``jobs`` table."""

    id: int
    kind: str
    model: str
    version: str
    alias: str | None
    delivery_id: str | None
    state: str
    attempts: int
    message: str


class JobQueue:
    """Thread-safe access to the queue file (WAL, synchronous=FULL): one connection and lock for
    writes, another for reads, so reading never waits behind a writer.

    Every method takes ``timeout_s``, the longest it waits for the lock and the file
    (default: the queue's ``timeout_s``, :data:`WORKER_WAIT_S`); past it, :class:`QueueBusyError`.
    """

    def __init__(self, path: str | Path, timeout_s: float = WORKER_WAIT_S) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        if self.path.is_dir():
            raise QueueFileError(f"queue {self.path}: is a folder; give the path of a sqlite file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock, self._read_lock = threading.Lock(), threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise QueueFileError(f"queue {self.path}: cannot open it as a sqlite file ({exc})") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self.recovered = self._recover(timeout_s)
            # reads have their own connection: in WAL mode they never wait for a writer
            self._read_db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.DatabaseError as exc:  # not a database, read-only, a foreign schema, locked too long
            self._db.close()
            raise QueueFileError(f"queue {self.path}: cannot use it as the job queue ({exc})") from None

    def close(self) -> None:
        with self._lock, self._read_lock:
            self._db.close()
            self._read_db.close()

    def _tx(self, timeout_s: float | None, write: bool = True) -> _Transaction:
        db, lock = (self._db, self._lock) if write else (self._read_db, self._read_lock)
        return _Transaction(db, lock, self.timeout_s if timeout_s is None else timeout_s, write)

    def _recover(self, timeout_s: float | None = None) -> int:
        """Put jobs left ``running`` by a killed process back in the queue."""
        with self._tx(timeout_s) as db:
            n = db.execute(
                "UPDATE jobs SET state='queued', not_before=0, updated_at=?, "
                "message='interrupted; resumed after restart' WHERE state='running'",
                (time.time(),),
            ).rowcount
        if n:
            logger.warning("resuming %d job(s) interrupted by a restart (queue %s)", n, self.path)
        return n

    def record_delivery(
        self, delivery_id: str, event: str, specs: Iterable[JobSpec], timeout_s: float | None = None
    ) -> list[int] | None:
        """Record ``delivery_id`` and queue its jobs in one transaction.

        Returns the ids of the jobs newly queued (empty when every job already exists), or
        None when the delivery id was seen before (nothing is queued).
        """
        now = time.time()
        with self._tx(timeout_s) as db:
            try:
                db.execute(
                    "INSERT INTO deliveries (delivery_id, event, received_at) VALUES (?, ?, ?)",
                    (delivery_id, event, now),
                )
            except sqlite3.IntegrityError:
                return None
            return [job_id for spec in specs if (job_id := self._enqueue(db, spec, delivery_id, now)) is not None]

    @staticmethod
    def _enqueue(db: sqlite3.Connection, spec: JobSpec, delivery_id: str, now: float) -> int | None:
        if spec.kind == EVALUATE:
            row = db.execute(
                "SELECT id, state FROM jobs WHERE kind=? AND model=? AND version=?",
                (EVALUATE, spec.model, spec.version),
            ).fetchone()
            if row is not None:
                if spec.revive and row[1] in REVIVABLE:
                    db.execute(
                        "UPDATE jobs SET state='queued', not_before=0, updated_at=?, delivery_id=?, "
                        "message='teacher tag set' WHERE id=?",
                        (now, delivery_id, row[0]),
                    )
                    return int(row[0])
                return None
        cur = db.execute(
            "INSERT INTO jobs (kind, model, version, alias, delivery_id, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (spec.kind, spec.model, spec.version, spec.alias, delivery_id, now, now),
        )
        if cur.lastrowid is None:  # sqlite sets it for every successful INSERT
            raise sqlite3.DatabaseError("the job queue returned no id for an inserted job")
        return int(cur.lastrowid)

    def claim(self, kinds: Iterable[str], timeout_s: float | None = None) -> Job | None:
        """Take the oldest due ``queued`` job of ``kinds`` and mark it ``running``; None when there is none."""
        kinds = tuple(kinds)
        marks = ",".join("?" * len(kinds))
        now = time.time()
        with self._tx(timeout_s) as db:
            row = db.execute(
                f"SELECT id FROM jobs WHERE state='queued' AND kind IN ({marks}) AND not_before<=? ORDER BY id LIMIT 1",
                (*kinds, now),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE jobs SET state='running', attempts=attempts+1, updated_at=? WHERE id=?", (now, row[0]))
        return self.get(int(row[0]), timeout_s)

    def finish(self, job_id: int, state: str, message: str = "", timeout_s: float | None = None) -> None:
        """Close a job as ``done``, ``error``, ``waiting`` or ``skipped``."""
        if state not in STATES or state in ("queued", "running"):
            raise ValueError(f"finish: state must be done, error, waiting or skipped, got {state!r}")
        with self._tx(timeout_s) as db:
            db.execute(
                "UPDATE jobs SET state=?, message=?, updated_at=? WHERE id=?",
                (state, message[:2000], time.time(), job_id),
            )

    def retry_later(self, job_id: int, delay_s: float, message: str, timeout_s: float | None = None) -> None:
        """Put a running job back in the queue, due in ``delay_s`` seconds."""
        now = time.time()
        with self._tx(timeout_s) as db:
            db.execute(
                "UPDATE jobs SET state='queued', not_before=?, message=?, updated_at=? WHERE id=?",
                (now + delay_s, message[:2000], now, job_id),
            )

    def get(self, job_id: int, timeout_s: float | None = None) -> Job | None:
        rows = self.jobs("id=?", (job_id,), timeout_s)
        return rows[0] if rows else None

    def jobs(self, where: str = "1=1", params: tuple = (), timeout_s: float | None = None) -> list[Job]:
        with self._tx(timeout_s, write=False) as db:
            rows = db.execute(
                "SELECT id, kind, model, version, alias, delivery_id, state, attempts, message "
                f"FROM jobs WHERE {where} ORDER BY id",
                params,
            ).fetchall()
        return [Job(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], int(r[7]), r[8]) for r in rows]

    def counts(self, timeout_s: float | None = None) -> dict[str, int]:
        """Jobs per state (every state present, 0 when none) and the number of deliveries seen."""
        with self._tx(timeout_s, write=False) as db:
            by_state = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
            deliveries = db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0]
        out = {state: int(by_state.get(state, 0)) for state in STATES}
        out["deliveries"] = int(deliveries)
        return out

    def next_due_in(self, kinds: Iterable[str], timeout_s: float | None = None) -> float | None:
        """Seconds until the next queued job of ``kinds`` is due (0 if one is due), None if none is queued."""
        kinds = tuple(kinds)
        marks = ",".join("?" * len(kinds))
        with self._tx(timeout_s, write=False) as db:
            row = db.execute(
                f"SELECT MIN(not_before) FROM jobs WHERE state='queued' AND kind IN ({marks})", kinds
            ).fetchone()
        return None if row[0] is None else max(0.0, float(row[0]) - time.time())


class _Transaction:
    """``with`` block holding the queue lock and one transaction (``BEGIN IMMEDIATE`` to write,
    a deferred ``BEGIN`` to read), both had within ``timeout_s`` or :class:`QueueBusyError`."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, timeout_s: float, write: bool) -> None:
        self._db, self._lock, self._timeout_s, self._write = db, lock, max(0.0, timeout_s), write

    def __enter__(self) -> sqlite3.Connection:
        deadline = time.monotonic() + self._timeout_s
        if not self._lock.acquire(timeout=self._timeout_s):
            raise QueueBusyError(f"the queue is busy in this process (waited {self._timeout_s:g} s)")
        try:
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            self._db.execute(f"PRAGMA busy_timeout = {left_ms}")
            self._db.execute("BEGIN IMMEDIATE" if self._write else "BEGIN")
        except BaseException as exc:
            self._lock.release()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise QueueBusyError(
                    f"the queue file is locked by another connection (waited {self._timeout_s:g} s)"
                ) from exc
            raise
        return self._db

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            self._db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._lock.release()
