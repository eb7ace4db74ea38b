"""How many threads torch computes with: one policy for training, inference and timing.

PyTorch's intra-op pool defaults to one thread per core and assumes it has the machine to
itself. On a small or shared machine that oversubscribes: OpenMP workers of one
operator wait on each other while other processes hold the cores, and every operator
pays for that barrier. The issue that introduced this module measured it on a busy
2-core machine: training at torch's default of 2 threads took 2.39 s per step, at 1
thread 0.57 s (``benchmarks/bench_threads.py`` measures it side by side).

The thread count is resolved once per piece of work (:func:`resolve`), per process, in
this order:

1. an explicit value: the ``threads`` option (``--threads``, ``-P threads=``,
   ``evaluator_config["threads"]``, ``TrainerSettings.threads``);
2. the count of the enclosing :func:`using` block, so that work nested in other work
   (the speed timings of a distillation, the evaluation inside a gate, a pyfunc's
   ``predict`` inside the evaluator) runs on the threads of the work around it;
3. the environment variable ``METACOMPRESS_THREADS``, else ``OMP_NUM_THREADS`` (the
   variable torch itself reads, so a limit set for every library holds here too);
4. the default, :func:`default_threads`: the cores this process may use
   (:func:`available_cores`: its CPU affinity, capped by a cgroup CPU quota), less one
   core of headroom on machines of more than two cores, less the cores other processes
   keep busy right now (:func:`busy_cores`, rounded to the nearest whole core), shared
   between the training processes, and never below 1. On an idle machine: 1 thread on 1
   core, 2 on 2, 3 on 4, 15 on 16; on 2 cores with one other busy process, 1. The spare
   core of a larger machine serves the work torch does not count (MLflow's logging, the
   heartbeat). Two cores get no spare: one thread leaves half the machine idle, where 2
   threads train 1.5× faster per step (issue 31), and rows are now tokenised once per fit
   (:mod:`.distill.batches`), so little else runs beside torch.

   :func:`busy_cores` probes ``/proc/stat`` for :data:`PROBE_S` seconds: the machine's
   busy CPU time less this process's own (``time.process_time``), scaled to the cores
   this process may use; where ``/proc/stat`` is absent, the 1-minute load average. The
   result is kept for :data:`PROBE_TTL_S` seconds. A run resolves its count once and
   records it (the pipeline's ``pipeline.threads`` parameter). The thread count changes
   floating-point sums in the last bits (a tiny fit moved its weights by 4·10⁻⁷ between 1
   and 2 threads), so a rerun that must match bit for bit pins ``threads`` to the recorded
   count.

``"auto"``, ``""``, ``0`` and ``None`` mean "not set" (the next source decides); any
other value must be a positive integer, or ``ValueError`` names the key or variable.

:func:`using` applies the count to a block (``torch.set_num_threads``, restored after)
and turns Hugging Face tokenizers' own thread pool off for the block unless the user
set ``TOKENIZERS_PARALLELISM``: its Rust workers then compete with torch's for the same
cores (and it warns, then disables itself, when a process forks after using it).
Inter-op threads are left alone: eager models never use that pool (only
``torch.jit.fork`` does), and torch allows setting it once per process only. The data
loaders run in the training process (``num_workers=0``), so no worker processes add
threads of their own.

Standard library only at import (torch is imported when a block starts).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

ENV = "METACOMPRESS_THREADS"
OMP_ENV = "OMP_NUM_THREADS"
TOKENIZERS_ENV = "TOKENIZERS_PARALLELISM"
HEADROOM = 1  # cores left to the work torch does not count, on machines of more than SMALL cores
SMALL = 2  # machines of this many cores or fewer keep no headroom
PROBE_S = 0.2  # how long busy_cores() watches /proc/stat
PROBE_TTL_S = 30.0  # how long a probe's result is reused
_probe: list[tuple[float, float]] = []  # (monotonic time, busy cores) of the last probe
UNSET = (None, "", "auto", 0, "0")
_active: list[int] = []  # counts of the enclosing using() blocks (torch's setting is process-wide)


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity (``os.sched_getaffinity``), or
    ``os.cpu_count()`` where there is none, capped by a cgroup v2 CPU quota
    (``cpu.max``, e.g. a container limited to 1.5 CPUs counts 2)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cores, quota) if quota else cores)


def _cgroup_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> int | None:
    """``ceil(quota / period)`` of a cgroup v2 ``cpu.max`` file; None when unlimited or absent."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def default_threads(processes: int = 1, cores: int | None = None, busy: float | None = None) -> int:
    """The default per training process: ``(cores − headroom − round(busy)) // processes``,
    at least 1; headroom is :data:`HEADROOM` above :data:`SMALL` cores, else 0, and
    ``busy`` defaults to :func:`busy_cores`."""
    cores = available_cores() if cores is None else cores
    busy = busy_cores() if busy is None else busy
    headroom = HEADROOM if cores > SMALL else 0
    free = cores - headroom - math.floor(max(0.0, busy) + 0.5)
    return max(1, free // max(1, processes))


def _proc_stat(path: str = "/proc/stat") -> tuple[int, int] | None:
    """``(busy, total)`` jiffies of all CPUs from the first line of ``/proc/stat``."""
    try:
        with open(path) as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def busy_cores(probe_s: float = PROBE_S, *, fresh: bool = False) -> float:
    """Cores of this process's share that other processes keep busy now (module
    docstring); 0.0 when nothing can be read. Reused for :data:`PROBE_TTL_S` seconds
    unless ``fresh``."""
    now = time.monotonic()
    if _probe and not fresh and now - _probe[-1][0] < PROBE_TTL_S:
        return _probe[-1][1]
    machine = os.cpu_count() or 1
    share = available_cores() / machine
    before = _proc_stat()
    if before is None:
        try:
            busy = os.getloadavg()[0] * share
        except (AttributeError, OSError):
            busy = 0.0
    else:
        own = time.process_time()
        time.sleep(probe_s)
        after, own = _proc_stat(), time.process_time() - own
        if after is None or after[1] <= before[1]:
            busy = 0.0
        else:
            wall_cores = (after[0] - before[0]) / (after[1] - before[1]) * machine
            busy = max(0.0, wall_cores - own / probe_s) * share
    _probe[:] = [(now, busy)]
    logger.debug("busy cores besides this process: %.2f", busy)
    return busy


def parse_threads(value: Any, source: str = "threads") -> int | None:
    """``value`` as a positive thread count, or None when it means "not set" (``None``,
    ``""``, ``"auto"``, ``0``). ``ValueError`` naming ``source`` otherwise."""
    if isinstance(value, str):
        value = value.strip().lower()
    if value in UNSET:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{source} must be a positive integer or 'auto', got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a positive integer or 'auto', got {value!r}") from None
    if not number.is_integer() or number < 1:
        raise ValueError(f"{source} must be a positive integer or 'auto', got {value!r}")
    return int(number)


def resolve(
    threads: Any = None, *, processes: int = 1, source: str = "threads", environ: Mapping[str, str] | None = None
) -> int:
    """The thread count of one piece of work in one process: ``threads`` when set, else
    (for one process) the enclosing :func:`using` block's, else ``$METACOMPRESS_THREADS``,
    else ``$OMP_NUM_THREADS``, else :func:`default_threads` for ``processes`` training
    processes. A bad value raises ``ValueError`` naming ``source`` or the variable
    (a malformed ``OMP_NUM_THREADS``, which other libraries read too, is ignored)."""
    explicit = parse_threads(threads, source)
    if explicit is not None:
        return _checked(explicit, source)
    if _active and processes == 1:
        return _active[-1]
    env = os.environ if environ is None else environ
    from_env = parse_threads(env.get(ENV), ENV)
    if from_env is not None:
        return _checked(from_env, ENV)
    try:
        from_omp = parse_threads(env.get(OMP_ENV), OMP_ENV)
    except ValueError:
        from_omp = None
    if from_omp is not None:
        return from_omp
    return default_threads(processes)


def _checked(threads: int, source: str) -> int:
    cores = available_cores()
    if threads > cores:
        logger.warning(
            "%s=%d is more than the %d core(s) this process may use: expect oversubscription", source, threads, cores
        )
    return threads


def describe(threads: int) -> str:
    """``"1 of 2 cores"``: for logs and reports."""
    return f"{threads} of {available_cores()} core(s)"


@contextmanager
def quiet_tokenizers() -> Iterator[None]:
    """``TOKENIZERS_PARALLELISM=false`` for the block, unless the user set it (then it is
    left alone); removed again afterwards when this block set it."""
    if TOKENIZERS_ENV in os.environ:
        yield
        return
    os.environ[TOKENIZERS_ENV] = "false"
    try:
        yield
    finally:
        if os.environ.get(TOKENIZERS_ENV) == "false":
            del os.environ[TOKENIZERS_ENV]


@contextmanager
def using(threads: Any = None, *, processes: int = 1, source: str = "threads") -> Iterator[int]:
    """Run the block with :func:`resolve`'s thread count in ``torch.set_num_threads``
    (the previous count is restored afterwards) and tokenizers' pool off
    (:func:`quiet_tokenizers`); yields the count."""
    count = resolve(threads, processes=processes, source=source)
    import torch

    previous = torch.get_num_threads()
    with quiet_tokenizers():
        if previous != count:
            torch.set_num_threads(count)
        _active.append(count)
        try:
            yield count
        finally:
            _active.pop()
            if torch.get_num_threads() != previous:
                torch.set_num_threads(previous)
