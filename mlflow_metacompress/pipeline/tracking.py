"""Where the pipeline tracks its runs: ``MLFLOW_TRACKING_URI`` unless unset or a file store
(MLflow 3 refuses file stores by default), else ``sqlite:///mlflow.db`` in the working
directory; the registry always follows the tracking store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

logger = logging.getLogger(__name__)


def is_file_store(uri: str) -> bool:
    """True for a plain path or ``file:`` URI (MLflow 3 refuses file stores by default)."""
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def default_tracking_uri(environ: Mapping[str, str] | None = None, cwd: str | Path | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` unless unset or a file store; then ``sqlite:///<cwd>/mlflow.db``."""
    env = os.environ if environ is None else environ
    uri = env.get("MLFLOW_TRACKING_URI", "").strip()
    if uri and not is_file_store(uri):
        return uri
    return f"sqlite:///{Path(cwd or Path.cwd()).resolve() / 'mlflow.db'}"


def setup_tracking() -> str:
    """Point tracking and the registry at :func:`default_tracking_uri`; return it.

    The registry always follows the tracking store: ``mlflow.set_registry_uri`` exports
    ``MLFLOW_REGISTRY_URI``, so an inherited value may name an unrelated store."""
    import mlflow

    given = os.environ.get("MLFLOW_TRACKING_URI", "")
    uri = default_tracking_uri()
    if given and given != uri:
        logger.warning("MLFLOW_TRACKING_URI=%s is a file store (refused by MLflow 3); using %s", given, uri)
        if os.environ.pop("MLFLOW_RUN_ID", None):
            logger.warning("the run id passed with the file store does not exist in %s; starting a new run", uri)
    os.environ["MLFLOW_TRACKING_URI"] = uri
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri
