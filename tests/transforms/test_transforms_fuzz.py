"""Bounded fuzz test of the transformation library (issue 12, "transformations never break
an evaluation").

A seeded generator mutates real-looking C, Java and Python (tests/programs and the snippets
below): truncations, deleted and duplicated spans, random bytes (as lone surrogates), NUL,
stray ``\\r``, shuffled lines, deep nesting and inputs over the size limit. For every input:
``transform_many`` never raises; ``transform`` raises only :class:`TransformError` and
otherwise agrees with ``transform_many``; every CHANGED output re-parses cleanly with
tree-sitter (the independent oracle) and, when the input compiled, Python output still
``compile()``s; no transformation fails, and none is caught producing broken code except on
Python that tree-sitter accepts but CPython rejects; every sample
is either within the per-sample limits or reported ``too_large``/``too_deep``.

The normal suite runs a few hundred inputs; ``METACOMPRESS_FUZZ_N=20000`` runs more, and
``python -c "from tests.transforms.test_transforms_fuzz import run_fuzz; print(run_fuzz(20000))"``
prints the counts per reason and the slowest sample.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from mlflow_metacompress.transforms import (
    LANGUAGES,
    TransformError,
    TransformLimits,
    TransformReason,
    TransformStatus,
    list_transforms,
    transform,
    transform_many,
)
from mlflow_metacompress.transforms._checks import compiles, parses_cleanly
from mlflow_metacompress.transforms._tree import Source

N = int(os.environ.get("METACOMPRESS_FUZZ_N", "240"))
LIMITS = TransformLimits(max_bytes=40_000, max_depth=120)  # small, so that both limits get hit cheaply
PROGRAMS = Path(__file__).parents[1] / "programs"
EXT = {"c": ".c", "java": ".java", "python": ".py"}

SNIPPETS = {
    "c": [
        "int sum(int *a, int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) {\n        s += a[i];\n"
        "    }\n    while (s > 100) s -= 7;\n    if (s < 0) { return -s; } else { return s; }\n}\n",
        "static void copy(char *dst, const char *src, size_t n) {\n    size_t k = 0;\n"
        "    while (k < n && src[k] != '\\0') { dst[k] = src[k]; k++; }\n    dst[k] = 0;\n}\n",
    ],
    "java": [
        "public int count(String s, char c) {\n    int n = 0;\n    for (int i = 0; i < s.length(); i++) {\n"
        "        if (s.charAt(i) == c) { n += 1; } else { n -= 0; }\n    }\n    return n;\n}\n"
    ],
    "python": [
        'def mean(xs):\n    """Mean of xs."""\n\n# a column-0 comment after the docstring\n'
        "    total = 0\n    for i in range(len(xs)):\n        total += xs[i]\n"
        "    while total > 100:\n        total -= 7\n    if total < 0:\n        return -total\n"
        "    else:\n        return total / 2\n"
    ],
}


def _seeds(language: str) -> list[str]:
    files = sorted(PROGRAMS.glob(f"{language}/*{EXT[language]}"))
    return SNIPPETS[language] + [f.read_text(encoding="utf-8") for f in files]


def _deep(rng: random.Random, language: str) -> str:
    depth = rng.choice([LIMITS.max_depth - 5, LIMITS.max_depth + 5, 3 * LIMITS.max_depth])
    if language == "python":
        return "def f(a):\n    x = " + "(" * depth + "a + 1" + ")" * depth + "\n    return x\n"
    head = "int f(int a) {\n" if language == "c" else "class T { int f(int a) {\n"
    body = "".join(f"if (a < {k}) {{\n" for k in range(depth)) + "a += 1;\n" + "} else { a--; }\n" * depth
    return head + body + "return a;\n}\n" + ("}\n" if language == "java" else "")


def mutate(rng: random.Random, code: str, language: str) -> str:
    """One seeded mutation of ``code`` (some leave it valid, most do not)."""
    n = len(code)
    i, j = sorted(rng.randrange(n + 1) for _ in range(2))
    kind = rng.randrange(13)
    if kind == 0:
        return code
    if kind == 1:
        return code[:i]  # truncation
    if kind == 2:
        return code[:i] + code[j:]  # deleted span
    if kind == 3:
        return code[:j] + code[i:j] + code[j:]  # duplicated span
    if kind == 4:  # random bytes, invalid UTF-8 kept as lone surrogates
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))).decode("utf-8", "surrogateescape")
        return code[:i] + junk + code[i:]
    if kind == 5:
        return code[:i] + "\0" + code[i:]
    if kind == 6:
        return code[:i] + rng.choice(["\r", "\r\n", "\n\r", "\t", "\ud800", "\udfff", "\x0c"]) + code[i:]
    if kind == 7:
        return code[:i] + rng.choice(list("{}()[];:,'\"#\\/*=<>")) + code[i:]
    lines = code.splitlines(keepends=True) or ["\n"]
    if kind == 8:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        return "".join(lines)
    if kind == 9:
        return code.replace("\n", rng.choice(["\r\n", "\r", "\n\n"]))
    if kind == 10:
        return _deep(rng, language)
    if kind == 11:  # over the size limit (a few times the seed)
        return code * (LIMITS.max_bytes // max(len(code.encode("utf-8", "surrogatepass")), 1) + 1)
    k = rng.randrange(len(lines))
    lines[k] = rng.choice(["", " ", "\t", "        "]) + lines[k].lstrip(" ")  # re-indent one line
    return "".join(lines)


def inputs(n: int, seed: int = 20251201) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    seeds = {lang: _seeds(lang) for lang in LANGUAGES}
    out = []
    for k in range(n):
        lang = LANGUAGES[k % len(LANGUAGES)]
        code = rng.choice(seeds[lang])
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            code = mutate(rng, code, lang) or code
        out.append((lang, code))
    return out


def _utf8(code: str) -> bytes | None:
    try:
        return code.encode("utf-8")
    except UnicodeEncodeError:
        return None


def check_one(language: str, code: str, names: list[str], rng: random.Random) -> dict[str, Any]:
    """Run every check on one input; returns the statuses and the time the sample took."""
    start = time.perf_counter()
    results = transform_many([code], names, language, seed=rng.randrange(1000), limits=LIMITS)
    elapsed = time.perf_counter() - start
    data = _utf8(code)
    first = results[names[0]][0]
    if data is None:
        assert first.status is TransformStatus.PARSE_ERROR and first.reason is TransformReason.NOT_TEXT
    elif len(data) > LIMITS.max_bytes:
        assert first.reason is TransformReason.TOO_LARGE
    else:
        src = Source(code, language)
        if src.has_error:
            assert first.status is TransformStatus.PARSE_ERROR and first.reason is TransformReason.UNPARSABLE
        elif src.depth > LIMITS.max_depth:
            assert first.reason is TransformReason.TOO_DEEP
        else:
            assert first.reason not in (TransformReason.TOO_LARGE, TransformReason.TOO_DEEP)
    input_compiles = language == "python" and data is not None and compiles(code)
    invalid = 0
    for name in names:
        (res,) = results[name]
        assert res.name == name and res.reason is not TransformReason.FAILED, (name, code)
        # the output check is a safety net: it may only fire on Python that CPython rejects
        # but tree-sitter accepts (garbage in); anywhere else a broken output is a bug
        if res.reason is TransformReason.INVALID_OUTPUT:
            assert language == "python" and not input_compiles, (name, code)
            invalid += 1
        if res.status is TransformStatus.CHANGED:
            assert res.code != code and parses_cleanly(res.code, language), (name, code, res.code)
            if input_compiles:
                assert compiles(res.code), (name, code, res.code)
        elif first.status is TransformStatus.PARSE_ERROR or first.over_limit:
            assert res.code == code and (res.status, res.reason) == (first.status, first.reason)
        else:
            assert res.code == code and res.status is TransformStatus.NOT_APPLICABLE
    name = rng.choice(names)
    seed = rng.randrange(1000)
    try:
        single = transform(code, name, language, seed=seed, limits=LIMITS)
    except TransformError:
        assert first.status is TransformStatus.PARSE_ERROR
    else:
        again = transform_many([code], [name], language, seed=seed, limits=LIMITS)[name][0]
        assert (single.code, single.status, single.reason) == (again.code, again.status, again.reason)
    return {
        "status": first.status,
        "reason": first.reason,
        "changed": sum(results[n][0].changed for n in names),
        "invalid": invalid,
        "seconds": elapsed,
    }


def run_fuzz(n: int) -> dict[str, Any]:
    names = {lang: list_transforms(lang) for lang in LANGUAGES}
    rng = random.Random(7)
    reasons: dict[str, int] = {}
    changed = invalid = 0
    slowest = 0.0
    for language, code in inputs(n):
        out = check_one(language, code, names[language], rng)
        key = out["reason"].value if out["reason"] is not None else "changed"
        reasons[key] = reasons.get(key, 0) + 1
        changed += out["changed"]
        invalid += out["invalid"]
        slowest = max(slowest, out["seconds"])
    return {
        "inputs": n,
        "first_transformation_reasons": reasons,
        "changed_outputs": changed,
        "caught_invalid_outputs_of_non_compiling_python": invalid,
        "max_seconds_per_sample": round(slowest, 3),
    }


@pytest.mark.slow
def test_generator_covers_every_kind_of_input() -> None:
    """The generator is not vacuous: it yields clean, unparsable, non-UTF-8, NUL, too-large
    and too-deep inputs in every language."""
    seen = {lang: set() for lang in LANGUAGES}
    for lang, code in inputs(N):
        data = _utf8(code)
        if data is None:
            seen[lang].add("not_text")
        elif len(data) > LIMITS.max_bytes:
            seen[lang].add("too_large")
        else:
            src = Source(code, lang)
            seen[lang].add("unparsable" if src.has_error else "too_deep" if src.depth > LIMITS.max_depth else "clean")
            if "\0" in code:
                seen[lang].add("nul")
    for lang in LANGUAGES:
        assert {"clean", "unparsable", "not_text", "too_large", "too_deep"} <= seen[lang], (lang, seen[lang])


@pytest.mark.slow
def test_fuzzed_inputs_never_break_a_transformation() -> None:
    summary = run_fuzz(N)
    reasons = summary["first_transformation_reasons"]
    assert sum(reasons.values()) == N
    assert summary["changed_outputs"] > N  # many inputs stay valid and do get transformed
