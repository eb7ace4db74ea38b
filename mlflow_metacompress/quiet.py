"""Library chatter kept out of log files: one place that decides what other libraries print.

When output is not a terminal (:func:`~.heartbeat.on_terminal`), progress bars written
to a file are noise: every redraw becomes text. :func:`quiet_libraries` then turns off

- MLflow's artifact upload and download bars (``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR``);
- the bars of ``transformers`` ("Loading weights", "Writing model shards") and of
  ``huggingface_hub``, with ``transformers.utils.logging.disable_progress_bar`` (imported
  here when transformers is installed: the callers load models with it anyway),

and, on a terminal too, hides warnings that tell the user nothing they can act on:
MLflow's hint about integer columns in an evaluation's data (the labels are integers by
design). A value the user set in the environment wins; everything is put back on exit.
The stage lines of :mod:`.pipeline.progress` and the heartbeat say what is happening.

Standard library only at import, so importing it stays light.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

QUIET_ENV = {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}  # read by MLflow whenever a bar would start
NOISE = (r"(\x1b\[[0-9;]*m)?Hint: Inferred schema contains integer column",)  # mlflow.types.utils, on the labels


def _transformers_logging() -> Any:
    """``transformers.utils.logging`` (its switch also covers ``huggingface_hub``'s bars), or
    None when transformers is not installed. Callers are about to load models with it anyway."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return None
    import transformers.utils.logging as tl

    return tl


@contextlib.contextmanager
def quiet_libraries(bars: bool, models: bool = True) -> Iterator[None]:
    """While active: no library progress bars unless ``bars`` (see the module docstring),
    and no unactionable library warnings. ``models=False`` (a command that loads no
    model) leaves transformers alone unless it is already imported."""
    with warnings.catch_warnings():
        for pattern in NOISE:
            warnings.filterwarnings("ignore", message=pattern)
        if bars:
            yield
            return
        saved = {name: os.environ.get(name) for name in QUIET_ENV}
        for name, value in QUIET_ENV.items():
            os.environ.setdefault(name, value)
        tl = _transformers_logging() if models or "transformers" in sys.modules else None
        was_enabled = tl is not None and tl.is_progress_bar_enabled()
        if tl is not None and was_enabled:
            tl.disable_progress_bar()
        try:
            yield
        finally:
            for name, previous in saved.items():
                if previous is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = previous
            if tl is not None and was_enabled:
                tl.enable_progress_bar()
