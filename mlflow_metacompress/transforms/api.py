"""Public entry points: one sample, many samples (parsed once), discovery and detection.

Every sample is first held to the per-sample limits of issue 12 (size before parsing,
nesting depth after), so one pathological row never stalls or aborts an evaluation.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import re
from collections.abc import Iterable, Iterator

from mlflow_metacompress.transforms._checks import DEFAULT_LIMITS, TransformLimits
from mlflow_metacompress.transforms._tree import LANGUAGES, Source, TransformError, _parser, encode_code
from mlflow_metacompress.transforms.base import (
    TransformReason,
    TransformResult,
    TransformStatus,
    get,
    load_all,
    run,
)

logger = logging.getLogger(__name__)


def list_transforms(language: str) -> list[str]:
    """Names of the transformations (modules of this package) that support ``language``, sorted."""
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    return sorted(name for name, spec in load_all(rescan=True).items() if language in spec.languages)


def _over_limit(code: str, language: str, limits: TransformLimits) -> tuple[Source | None, TransformReason | None]:
    """Parse ``code`` within ``limits``: (source, None), or (None, TOO_LARGE) / (source, TOO_DEEP).

    Raises :class:`TransformError` for a non-string or non-UTF-8 code.
    """
    if len(encode_code(code)) > limits.max_bytes:
        return None, TransformReason.TOO_LARGE
    src = Source(code, language)
    if src.depth > limits.max_depth:
        return src, TransformReason.TOO_DEEP
    return src, None


def transform(
    code: str, name: str, language: str, seed: int = 0, limits: TransformLimits | None = None
) -> TransformResult:
    """Apply transformation ``name`` to one sample.

    Raises :class:`TransformError` when ``code`` is not a string, not valid UTF-8 (e.g.
    lone surrogates) or does not parse cleanly. A sample over ``limits`` (default 200 KB,
    depth 500) is returned unchanged as NOT_APPLICABLE with reason ``too_large``/``too_deep``.
    """
    get(name, language)
    limits = limits or DEFAULT_LIMITS
    src, reason = _over_limit(code, language, limits)
    if src is not None:
        src.require_clean()
    if src is None or reason is not None:  # no source comes only with a reason (too_large)
        return TransformResult(code, TransformStatus.NOT_APPLICABLE, name, reason)
    return run(src, name, seed)


def apply_transform(code: str, name: str, language: str, seed: int = 0, limits: TransformLimits | None = None) -> str:
    """The transformed code, or ``code`` unchanged when the transformation does not apply."""
    return transform(code, name, language, seed, limits).code


_GC_EVERY = 1000
"""Samples between young-generation collections while the cyclic collector is paused."""


@contextlib.contextmanager
def _collector_paused() -> Iterator[bool]:
    """Pause Python's cyclic garbage collector (yields whether this call paused it).

    Flattening a sample allocates thousands of nodes; each allocation burst triggers
    collections that scan every object in the process, and in an evaluation process
    (mlflow, torch, transformers: ~500,000 objects) that scanning cost twice the
    transformations themselves. The snapshots are freed by reference counting
    (:meth:`Source.release` cuts their parent links), so nothing here needs the collector;
    :func:`transform_many` still runs a cheap young-generation collection every
    ``_GC_EVERY`` samples, and the collector is re-enabled on exit, even on error.
    """
    if not gc.isenabled():
        yield False
        return
    gc.disable()
    try:
        yield True
    finally:
        gc.enable()


def transform_many(
    codes: list[str],
    names: list[str],
    language: str,
    seed: int = 0,
    progress: bool = False,
    limits: TransformLimits | None = None,
) -> dict[str, list[TransformResult]]:
    """Apply each transformation in ``names`` to every sample, parsing each sample once.

    Never raises on a sample (unknown names or languages still raise ``ValueError``):
    unparsable or non-UTF-8 samples get ``PARSE_ERROR`` for every transformation, samples
    over ``limits`` get ``NOT_APPLICABLE`` with reason ``too_large``/``too_deep``, and a
    transformation that fails on a sample is logged and reported as NOT_APPLICABLE.
    Use :func:`~mlflow_metacompress.transforms.count_reasons` to count the reasons.
    """
    for name in names:
        get(name, language)
    limits = limits or DEFAULT_LIMITS
    out: dict[str, list[TransformResult]] = {name: [] for name in names}
    iterator: Iterable[str] = codes
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(codes, desc=f"transforming {language}", unit="sample")
    with _collector_paused() as paused:
        for i, code in enumerate(iterator, 1):
            _transform_sample(code, names, language, seed, limits, out)
            if paused and i % _GC_EVERY == 0:
                gc.collect(1)
    return out


def _transform_sample(
    code: str,
    names: list[str],
    language: str,
    seed: int,
    limits: TransformLimits,
    out: dict[str, list[TransformResult]],
) -> None:
    """Parse one sample once, apply every transformation in ``names``, append to ``out``."""
    src: Source | None = None
    status, reason = TransformStatus.NOT_APPLICABLE, None
    try:
        src, reason = _over_limit(code, language, limits)
        if src is not None and src.has_error:
            status, reason = TransformStatus.PARSE_ERROR, TransformReason.UNPARSABLE
    except TransformError as exc:
        logger.debug("sample could not be parsed: %s", exc)
        status, reason = TransformStatus.PARSE_ERROR, TransformReason.NOT_TEXT
    except Exception:  # noqa: BLE001 - one sample must never abort an evaluation
        logger.warning("sample could not be parsed", exc_info=True)
        status, reason = TransformStatus.PARSE_ERROR, TransformReason.UNPARSABLE
    for name in names:
        if reason is not None or src is None:
            out[name].append(TransformResult(code, status, name, reason))
        else:
            out[name].append(run(src, name, seed))
    if src is not None:
        src.release()


_HINTS = {
    "python": [
        r"^\s*def \w+\(.*\)\s*(->[^:]+)?:\s*$",
        r"^\s*(import|from) [\w.]+",
        r"\bself\b",
        r"^\s*(elif|except|with)\b",
        r":\s*$",
        r"\bNone\b|\bTrue\b|\bFalse\b",
    ],
    "java": [
        r"\b(public|private|protected)\b",
        r"\bnew [A-Z]\w*\s*[(<\[]",
        r"\bString\b",
        r"\bthrows\b",
        r"@Override|\bextends\b|\bimplements\b",
        r"\bSystem\.out\b",
        r"\bboolean\b|\bnull\b",
    ],
    "c": [
        r"^\s*#\s*(include|define|if)",
        r"->",
        r"\bstruct\b",
        r"\bNULL\b",
        r"\b(unsigned|uint\d+_t|size_t)\b",
        r"\*\s*\w+\s*[=;,)]",
        r"\bsizeof\b|\bgoto\b|\bprintf\b",
    ],
}


def detect_language(code: str) -> str:
    """Guess 'c', 'java' or 'python': clean tree-sitter parses first, then keyword hints."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError("cannot detect the language of empty code")
    data = encode_code(code)

    def key(lang: str) -> tuple[bool, int]:
        clean = not _parser(lang).parse(data).root_node.has_error
        return clean, sum(len(re.findall(p, code, re.M)) for p in _HINTS[lang])

    return max(LANGUAGES, key=key)  # the first of equally good languages, in LANGUAGES' order
