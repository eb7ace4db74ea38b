"""The keys of the on-disk cache (:mod:`.cache`): whose outputs an entry holds (the model's
identity), on which input rows (their digest), and of what kind.

Model identity (:func:`model_identity`) is the logged model's ``model_uuid`` from its
``MLmodel`` file: the same whether the model is reached by alias, version number,
``runs:/`` or ``models:/m-…`` URI or loaded as a ``PyFuncModel``, and new for every logged
model, so a fresh registry that reuses ``name/1`` for another model gets another identity.

An entry's key (:func:`entry_key`) hashes the cache format, the entry's kind, the model
identity, the rows' digest (:func:`rows_digest`) and an optional extra string.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from typing import Any

from .cache import FORMAT, CacheEntryError


# ------------------------------------------------------------------------- identity
def model_identity(model_or_uri: Any, uri: str | None = None) -> str | None:
    """One identity for caching, shared by the evaluator and distillation, or None when
    the model has none (plain callables, MLmodel files without any id).

    Accepts a model URI (``models:/name/1``, ``models:/name@alias``, ``runs:/…``, a path)
    or a loaded ``PyFuncModel``. Prefers the ``MLmodel``'s ``model_uuid``, then its
    ``model_id``, then run id and artifact path; a registry URI whose ``MLmodel`` has none
    of those is named by its pinned version, source and creation time.
    """
    if isinstance(model_or_uri, (str, os.PathLike)):
        return _uri_identity(str(model_or_uri))
    found = _metadata_identity(getattr(model_or_uri, "metadata", None))
    if found is None and uri:
        try:
            return _uri_identity(uri)
        except CacheEntryError:  # a loaded model that cannot be identified is simply not cached
            return None
    return found


def _metadata_identity(meta: Any) -> str | None:
    if meta is None:
        return None
    for attr in ("model_uuid", "model_id"):
        value = getattr(meta, attr, None)
        if value:
            return f"{attr}:{value}"
    if getattr(meta, "run_id", None):
        return f"run:{meta.run_id}:{getattr(meta, 'artifact_path', '') or ''}"
    return None


def _uri_identity(uri: str) -> str | None:
    from mlflow.models import Model

    try:
        found = _metadata_identity(Model.load(uri))
    except Exception as exc:
        raise CacheEntryError(f"cannot read the MLmodel of {uri!r} to identify it: {exc}") from exc
    if found is not None or not uri.startswith("models:/"):
        return found
    return _registry_identity(uri)


def resolve_model_uri(uri: str) -> str:
    """Pin ``models:/name/latest`` or ``models:/name@alias`` to ``models:/name/<version>``
    so a URI names exactly one model version; other URIs are returned unchanged."""
    if not uri.startswith("models:/"):
        return uri
    import mlflow

    client = mlflow.MlflowClient()
    rest = uri[len("models:/") :]
    if "@" in rest:
        name, alias = rest.split("@", 1)
        return f"models:/{name}/{client.get_model_version_by_alias(name, alias).version}"
    name, _, ref = rest.rpartition("/")
    if ref == "latest":
        versions = client.search_model_versions(f"name='{name}'")
        if not versions:
            raise ValueError(f"registered model {name!r} has no versions")
        return f"models:/{name}/{max(int(v.version) for v in versions)}"
    return uri


def _registry_identity(uri: str) -> str:
    import mlflow

    pinned = resolve_model_uri(uri)
    name, _, version = pinned[len("models:/") :].rpartition("/")
    mv = mlflow.MlflowClient().get_model_version(name, version)
    return f"{pinned}|{getattr(mv, 'model_id', None) or mv.source}|{mv.creation_timestamp}"


# ------------------------------------------------------------------------- keys
def texts_digest(columns: Iterable[tuple[str, Iterable[Any]]]) -> str:
    """SHA-256 over named columns of values, order-sensitive and unambiguous (each value
    is length-prefixed; strings are UTF-8 with lone surrogates passed through)."""
    h = hashlib.sha256()
    for name, values in columns:
        _feed(h, b"c", name.encode("utf-8", "surrogatepass"))
        for v in values:
            if isinstance(v, str):
                _feed(h, b"s", v.encode("utf-8", "surrogatepass"))
            else:
                _feed(h, b"o", f"{type(v).__name__}:{v!r}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _feed(h: Any, tag: bytes, data: bytes) -> None:
    h.update(tag + len(data).to_bytes(8, "little") + data)


def rows_digest(df: Any, columns: Sequence[str]) -> str:
    """:func:`texts_digest` of the given DataFrame columns (order-sensitive)."""
    return texts_digest((c, df[c].tolist()) for c in columns)


def entry_key(kind: str, identity: str, rows: str, extra: str = "") -> str:
    """The key of the entry for ``kind`` outputs of model ``identity`` on rows ``rows``."""
    text = "\x1f".join((f"metacompress-cache-v{FORMAT}", kind, identity, rows, extra))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]
