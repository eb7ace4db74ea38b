"""The speed-ups of issue 15.4 change no output: the collector pause is undone, the batch
path agrees with one-sample calls, and ``compose`` agrees with the naive re-parse-every-step
algorithm it replaced."""

from __future__ import annotations

import gc
import random

import pytest

from mlflow_metacompress.transforms import list_transforms, transform, transform_many
from mlflow_metacompress.transforms._checks import compiles, parses_cleanly
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import REGISTRY, run
from mlflow_metacompress.transforms.compose import COMPOSE_K
from tests.support.programs import SNIPPETS


def _naive_compose(code: str, language: str, seed: int) -> str | None:
    """compose as first written: a full Source after every changed step, output re-parsed."""
    src = Source(code, language)
    rng = random.Random(f"compose:{seed}")
    k = rng.choice(COMPOSE_K)
    names = sorted(n for n, spec in REGISTRY.items() if n != "compose" and language in spec.languages)
    rng.shuffle(names)
    current, applied = src, 0
    for name in names:
        if applied == k:
            break
        result = run(current, name, seed=rng.randrange(2**31), verify=False)
        if result.changed:
            following = Source(result.code, language)
            if following.has_error:
                continue
            current, applied = following, applied + 1
    out = current.code if applied else None
    if out is None or out == code or not parses_cleanly(out, language):
        return None
    if language == "python" and compiles(code) and not compiles(out):
        return None
    return out


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_compose_matches_the_naive_algorithm(language: str) -> None:
    changed = 0
    for code in SNIPPETS[language]:
        for seed in range(12):
            res = transform(code, "compose", language, seed=seed)
            expected = _naive_compose(code, language, seed)
            assert (res.code if res.changed else None) == expected, (language, seed)
            changed += res.changed
    assert changed > 0  # the comparison covered composed outputs, not only no-ops


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_batch_equals_one_sample_calls(language: str) -> None:
    codes = SNIPPETS[language] * 2 + ["broken ( {"]
    names = list_transforms(language)
    out = transform_many(codes, names, language, seed=3)
    for name in names:
        for code, got in zip(codes, out[name], strict=True):
            try:
                want = transform(code, name, language, seed=3)
            except ValueError:  # transform() raises on unparsable code; the batch reports it
                assert got.code == code and not got.changed
                continue
            assert (got.code, got.status, got.reason) == (want.code, want.status, want.reason)


def test_collector_state_is_restored() -> None:
    assert gc.isenabled()
    transform_many(SNIPPETS["c"], ["swap_if_else"], "c")
    assert gc.isenabled()
    gc.disable()
    try:
        transform_many(SNIPPETS["c"], ["swap_if_else"], "c")
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()

    class Boom(Exception):
        pass

    class Codes(list):
        def __iter__(self):
            yield SNIPPETS["c"][0]
            assert not gc.isenabled()  # paused while transforming
            raise Boom

    with pytest.raises(Boom):
        transform_many(Codes(), ["swap_if_else"], "c")
    assert gc.isenabled()


def _live_nodes() -> int:
    return sum(isinstance(o, Node) for o in gc.get_objects())


@pytest.mark.slow
def test_released_source_frees_its_nodes() -> None:
    gc.collect()
    gc.disable()
    try:
        before = _live_nodes()
        src = Source(SNIPPETS["c"][0], "c")
        del src
        assert _live_nodes() > before  # parent links are cycles: without release they linger
        gc.collect()
        src = Source(SNIPPETS["c"][0], "c")
        src.release()
        del src
        assert _live_nodes() == before  # freed by reference counting, no collector needed
    finally:
        gc.enable()
