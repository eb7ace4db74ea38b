"""Public entry points: one sample, many samples (parsed once), discovery and detection."""

from __future__ import annotations

import logging
import re

from mlflow_metacompress.transforms._tree import LANGUAGES, Source, TransformError, _parser
from mlflow_metacompress.transforms.base import TransformResult, TransformStatus, get, load_all, run

logger = logging.getLogger(__name__)


def list_transforms(language: str) -> list[str]:
    """Names of the transformations that support ``language``, in registration order."""
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    return [name for name, spec in load_all().items() if language in spec.languages]


def transform(code: str, name: str, language: str, seed: int = 0) -> TransformResult:
    """Apply transformation ``name``; raises :class:`TransformError` on unparsable input."""
    get(name, language)
    src = Source(code, language)
    src.require_clean()
    return run(src, name, seed)


def apply_transform(code: str, name: str, language: str, seed: int = 0) -> str:
    """The transformed code, or ``code`` unchanged when the transformation does not apply."""
    return transform(code, name, language, seed).code


def transform_many(codes: list[str], names: list[str], language: str, seed: int = 0,
                   progress: bool = False) -> dict[str, list[TransformResult]]:
    """Apply each transformation in ``names`` to every sample, parsing each sample once.

    Never raises on bad input: unparsable samples get ``TransformStatus.PARSE_ERROR`` (and
    their code unchanged) for every transformation.
    """
    for name in names:
        get(name, language)
    out: dict[str, list[TransformResult]] = {name: [] for name in names}
    iterator = codes
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(codes, desc=f"transforming {language}", unit="sample")
    for code in iterator:
        try:
            src = Source(code, language)
            clean = not src.has_error
        except (ValueError, UnicodeError, TypeError) as exc:
            logger.debug("sample could not be parsed: %s", exc)
            src, clean = None, False
        for name in names:
            if not clean or src is None:
                out[name].append(TransformResult(code, TransformStatus.PARSE_ERROR, name))
                continue
            try:
                out[name].append(run(src, name, seed))
            except TransformError as exc:
                logger.warning("transformation %s failed on a sample: %s", name, exc)
                out[name].append(TransformResult(code, TransformStatus.NOT_APPLICABLE, name))
    return out


_HINTS = {
    "python": [r"^\s*def \w+\(.*\)\s*(->[^:]+)?:\s*$", r"^\s*(import|from) [\w.]+", r"\bself\b",
               r"^\s*(elif|except|with)\b", r":\s*$", r"\bNone\b|\bTrue\b|\bFalse\b"],
    "java": [r"\b(public|private|protected)\b", r"\bnew [A-Z]\w*\s*[(<\[]", r"\bString\b", r"\bthrows\b",
             r"@Override|\bextends\b|\bimplements\b", r"\bSystem\.out\b", r"\bboolean\b|\bnull\b"],
    "c": [r"^\s*#\s*(include|define|if)", r"->", r"\bstruct\b", r"\bNULL\b", r"\b(unsigned|uint\d+_t|size_t)\b",
          r"\*\s*\w+\s*[=;,)]", r"\bsizeof\b|\bgoto\b|\bprintf\b"],
}


def detect_language(code: str) -> str:
    """Guess 'c', 'java' or 'python': clean tree-sitter parses first, then keyword hints."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError("cannot detect the language of empty code")
    data = code.encode("utf-8")
    best = None
    for lang in LANGUAGES:
        clean = not _parser(lang).parse(data).root_node.has_error
        score = sum(len(re.findall(p, code, re.M)) for p in _HINTS[lang])
        key = (clean, score)
        if best is None or key > best[0]:
            best = (key, lang)
    return best[1]  # type: ignore[index]
