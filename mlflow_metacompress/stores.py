"""The tracking store that commands reading runs (``metacompress report``, ``compare``,
``gate``) talk to, checked before it is opened.

MLflow 3 defaults to ``sqlite:///mlflow.db`` in the working directory and creates that
file (an empty, migrated database) the moment a client opens it. A command that only
*reads* runs, run from the wrong folder, would therefore leave an empty ``mlflow.db``
behind and report a run as "not found" without saying where it looked.
:func:`existing_store` refuses a ``sqlite:`` store whose file does not exist, naming
the tracking URI, and :func:`get_run` names the tracking URI when a run is missing.
Standard library only at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:`` URI (resolved like SQLAlchemy resolves it), or
    None (another scheme, an in-memory database, or a malformed URI MLflow will report)."""
    if not uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    try:
        database = make_url(uri).database
    except Exception:
        return None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).resolve()


def tracking_uri() -> str:
    """The tracking URI in effect (``--tracking-uri``, ``MLFLOW_TRACKING_URI`` or MLflow's default)."""
    import mlflow

    return mlflow.get_tracking_uri()


def existing_store() -> str:
    """The tracking URI, after checking that a ``sqlite:`` store's file exists (nothing is
    created); ``ValueError`` naming the URI and the file otherwise."""
    uri = tracking_uri()
    db = sqlite_file(uri)
    if db is not None and not db.is_file():
        raise ValueError(
            f"no MLflow tracking store at {db} (tracking URI {uri}): run the command in the folder that "
            "holds mlflow.db, or pass --tracking-uri / set MLFLOW_TRACKING_URI"
        )
    return uri


def is_missing(exc: BaseException) -> bool:
    """True for MLflow's "does not exist" errors (an unknown run, model or version)."""
    return getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST"


def get_run(client: Any, run_id: str, what: str = "run") -> Any:
    """``client.get_run(run_id)``; a missing run is a ``ValueError`` naming ``what``, the
    id and the tracking URI (MLflow's message names neither the store nor the command's argument)."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id)
    except MlflowException as exc:
        if is_missing(exc) or "not found" in str(exc.message).lower():
            uri = getattr(client, "tracking_uri", None) or tracking_uri()
            raise ValueError(f"{what} {run_id!r} not found in the tracking store {uri}") from None
        raise
