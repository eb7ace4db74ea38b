"""Model URIs checked before anything loads, with errors that name the role and the model.

``metacompress evaluate`` and the registry gate pass the student to
``mlflow.models.evaluate``, which loads it before any evaluator runs, so a mistyped URI
would surface as MLflow's bare "Registered Model with name=… not found", without saying
whether the student or the teacher is at fault, and ``models:/name@champion`` as
"Registered model alias champion not found", without naming the model.
:func:`check_model_uri` reads only the model's ``MLmodel`` file (no weights) and raises
:class:`~.validation.MetaCompressInputError` naming the role, the URI and what is
missing; :func:`resolve_error` words a load failure the same way.
"""

from __future__ import annotations

from typing import Any

from .checks import MetaCompressInputError


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _message(exc: BaseException) -> str:
    return _one_line(getattr(exc, "message", None) or exc or type(exc).__name__)


def _alias_problem(uri: str) -> str | None:
    """For ``models:/name@alias``: what is missing (the model, or its alias and the aliases it has)."""
    if not uri.startswith("models:/") or "@" not in uri:
        return None
    name, alias = uri[len("models:/") :].split("@", 1)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        model = MlflowClient().get_registered_model(name)
    except MlflowException:
        return f"registered model {name!r} does not exist"
    aliases = sorted(getattr(model, "aliases", None) or {})
    if alias in aliases:
        return None
    listed = ", ".join(aliases) if aliases else "none"
    return f"registered model {name!r} has no alias {alias!r} (its aliases: {listed})"


def resolve_error(uri: str, role: str, exc: BaseException) -> MetaCompressInputError:
    """The one-line error for ``role``'s model at ``uri`` that failed to load with ``exc``."""
    try:
        detail = _alias_problem(uri) or _message(exc)
    except Exception:  # the registry itself is unreachable: MLflow's own words
        detail = _message(exc)
    return MetaCompressInputError(f"{role} model URI {uri!r} does not resolve: {detail}")


def check_model_uri(uri: Any, role: str) -> None:
    """Raise :class:`~.validation.MetaCompressInputError` naming ``role`` (``teacher`` or
    ``student``) and ``uri`` when ``uri`` names no MLflow model; only the ``MLmodel``
    file is read. Objects (a ``PyFuncModel``, a callable) are left to the evaluator."""
    if not isinstance(uri, str):
        return
    if not uri.strip():
        raise MetaCompressInputError(f"{role} model URI is empty")
    from mlflow.models import Model

    try:
        Model.load(uri)
    except Exception as exc:
        raise resolve_error(uri, role, exc) from None
