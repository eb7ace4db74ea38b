"""Robustness of the transformations (issue 12): fresh names never run out, per-sample
limits with reasons, Python outputs that compile, non-UTF-8 input, and discovery of a new
transformation module dropped into the package (issue 11)."""

from __future__ import annotations

import inspect
import sys
import tempfile
from pathlib import Path

import pytest

import mlflow_metacompress.transforms as transforms_pkg
from mlflow_metacompress.transforms import (
    LIMIT_REASONS,
    TransformError,
    TransformLimits,
    TransformReason,
    TransformStatus,
    apply_transform,
    base,
    count_reasons,
    list_transforms,
    renamable_identifiers,
    transform,
    transform_many,
)
from mlflow_metacompress.transforms._checks import compiles, parses_cleanly
from mlflow_metacompress.transforms._tree import Source


def _many_locals_c(n: int) -> str:
    body = "".join(f"    int v{k} = a + {k};\n" for k in range(n))
    total = " + ".join(f"v{k}" for k in range(0, n, 97))
    return f"int f(int a) {{\n{body}    return {total};\n}}\n"


@pytest.mark.slow
def test_fresh_names_never_run_out_on_3100_locals() -> None:
    code = _many_locals_c(3100)
    out = transform_many([code], ["rename_variables", "insert_dead_code", "literal_to_constant"], "c")
    res = out["rename_variables"][0]
    assert res.status is TransformStatus.CHANGED and parses_cleanly(res.code, "c")
    before, after = renamable_identifiers(code, "c"), renamable_identifiers(res.code, "c")
    assert len(before) == len(after) == 3101  # 3100 locals + the parameter; no two merged
    assert set(after).isdisjoint(before)
    assert all(r[0].status is TransformStatus.CHANGED for r in out.values())


def test_fresh_names_for_many_python_locals_compile_and_keep_behaviour() -> None:
    body = "".join(f"    v{k} = a + {k}\n" for k in range(3100))
    code = f"def f(a):\n{body}    return v0 + v3099\n"
    out = apply_transform(code, "rename_variables", "python", seed=3)
    assert out != code and compiles(out)
    env_a: dict = {}
    env_b: dict = {}
    exec(compile(code, "a", "exec"), env_a)  # noqa: S102 - test oracle on generated code
    exec(compile(out, "b", "exec"), env_b)  # noqa: S102 - test oracle
    assert env_a["f"](5) == env_b["f"](5) == 3109


MKTEMP_SHAPE = (
    'def mktemp(suffix="", dir=None):\n    """Doc."""\n\n##    from warnings import warn\n'
    '##    warn("unsafe")\n\n    if dir is None:\n        dir = "/tmp"\n'
    '    return dir + "/x" + suffix + "tmp"\n'
)


@pytest.mark.parametrize("name", ["literal_to_constant", "compose", "insert_dead_code"])
def test_column0_comment_after_docstring_still_compiles(name: str) -> None:
    codes = [MKTEMP_SHAPE, inspect.getsource(tempfile.mktemp)]
    for code in codes:
        for seed in range(6):
            res = transform(code, name, "python", seed=seed)
            assert res.status is TransformStatus.CHANGED, (seed, res.reason)
            assert compiles(res.code), res.code
    env_a: dict = {}
    env_b: dict = {}
    exec(compile(MKTEMP_SHAPE, "a", "exec"), env_a)  # noqa: S102 - test oracle
    exec(compile(apply_transform(MKTEMP_SHAPE, name, "python"), "b", "exec"), env_b)  # noqa: S102 - test oracle
    (fn,) = [v for k, v in env_b.items() if k != "__builtins__"]  # compose may rename mktemp
    assert env_a["mktemp"](".s") == fn(".s") == "/tmp/x.stmp"


@pytest.mark.parametrize("name", ["insert_dead_code", "compose", "while_to_for"])
def test_stray_carriage_return_at_line_start_still_compiles(name: str) -> None:
    code = "def f(a):\n\r    x = a\n\r    while x > 10:\n\r        x -= 3\n    return x\n"
    env_a: dict = {}
    exec(compile(code, "a", "exec"), env_a)  # noqa: S102 - test oracle
    for seed in range(6):
        res = transform(code, name, "python", seed=seed)
        assert res.status is TransformStatus.CHANGED and compiles(res.code), repr(res.code)
        env_b: dict = {}
        exec(compile(res.code, "b", "exec"), env_b)  # noqa: S102 - test oracle
        (fn,) = [v for k, v in env_b.items() if k != "__builtins__"]  # compose may rename f
        assert fn(25) == env_a["f"](25) == 10


def test_non_compiling_python_output_is_not_applicable(monkeypatch, caplog) -> None:
    def broken(src, rng):  # a column-0 statement inside a function body
        return src.code.replace("    return", "y = 1\n    return", 1)

    monkeypatch.setitem(base.REGISTRY, "broken_py", base.Transformation("broken_py", ("python",), broken, "t"))
    code = "def f(a):\n    if a:\n        a += 1\n    return a\n"
    assert parses_cleanly(broken(Source(code, "python"), None), "python")  # tree-sitter alone accepts it
    res = transform(code, "broken_py", "python")
    assert (res.status, res.reason, res.code) == (TransformStatus.NOT_APPLICABLE, TransformReason.INVALID_OUTPUT, code)
    assert "non-compiling" in caplog.text

    def crashing(src, rng):
        raise RuntimeError("boom")

    monkeypatch.setitem(base.REGISTRY, "crash", base.Transformation("crash", ("c",), crashing, "t"))
    out = transform_many(["int f(int a) { return a; }"], ["crash"], "c")["crash"][0]
    assert (out.status, out.reason) == (TransformStatus.NOT_APPLICABLE, TransformReason.FAILED)


@pytest.mark.parametrize("code", ["int f(int a) { return a; }\ud800", "int f(int \udcff) { return 1; }"])
def test_lone_surrogates_raise_transform_error_or_parse_error(code: str) -> None:
    with pytest.raises(TransformError, match="not valid UTF-8"):
        transform(code, "swap_operands", "c")
    with pytest.raises(TransformError, match="not valid UTF-8"):
        apply_transform(code, "rename_variables", "c")
    out = transform_many(
        [code, None, b"int f;", "int f(int a) { return a < 1; }"],  # type: ignore[list-item]  # not str on purpose
        ["swap_operands"],
        "c",
    )["swap_operands"]
    assert [(r.status, r.reason) for r in out[:3]] == [(TransformStatus.PARSE_ERROR, TransformReason.NOT_TEXT)] * 3
    assert out[3].status is TransformStatus.CHANGED
    with pytest.raises(TransformError, match="must be a str"):
        transform(None, "swap_operands", "c")  # type: ignore[arg-type]  # not str on purpose


def _nested(depth: int) -> str:
    return "int f(int a) {\n" + "if (a) {\n" * depth + "a = a + 1;\n" + "}\n" * depth + "return a;\n}\n"


def test_depth_counts_brackets_and_python_blocks() -> None:
    assert Source("int f(int a) { return (a); }", "c").depth == 2  # { and (
    assert Source(_nested(7), "c").depth == 8
    assert Source("def f(a):\n    if a:\n        return (a)\n", "python").depth == 3
    assert Source("int f(int a) { if (a) x(); else if (a) y(); else if (a) z(); }", "c").depth == 2


@pytest.mark.slow
def test_too_deep_and_too_large_samples_are_reported_with_reasons() -> None:
    names = list_transforms("c")
    deep, shallow = _nested(501), _nested(400)
    large = "int f(int a) {\n" + "    a = a + 1;\n" * 14_000 + "    return a;\n}\n"
    assert len(large.encode()) > 200_000
    out = transform_many([deep, shallow, large], names, "c")
    for name in names:
        assert [r.reason for r in out[name]][::2] == [TransformReason.TOO_DEEP, TransformReason.TOO_LARGE]
        assert out[name][0].code == deep and out[name][2].code == large and out[name][0].over_limit
    assert out["rename_function"][1].status is TransformStatus.CHANGED
    counts = count_reasons(r for name in names for r in out[name])
    assert counts["too_deep"] == counts["too_large"] == len(names)
    assert {r.value for r in LIMIT_REASONS} == {"too_large", "too_deep"}
    res = transform(large, "rename_variables", "c")
    assert (res.status, res.reason) == (TransformStatus.NOT_APPLICABLE, TransformReason.TOO_LARGE)
    raised = TransformLimits(max_bytes=10**6, max_depth=10**4)
    assert transform(large, "rename_variables", "c", limits=raised).status is TransformStatus.CHANGED
    assert transform(deep, "rename_function", "c", limits=raised).status is TransformStatus.CHANGED
    tight = TransformLimits(max_bytes=500, max_depth=3)
    assert transform(_nested(3), "rename_function", "c", limits=tight).reason is TransformReason.TOO_DEEP
    assert transform(_nested(2), "rename_function", "c", limits=tight).status is TransformStatus.CHANGED
    padded = _nested(1) + "/*" + "x" * 500 + "*/\n"
    assert transform(padded, "rename_function", "c", limits=tight).reason is TransformReason.TOO_LARGE


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "9"])
def test_limits_reject_bad_values(bad) -> None:
    with pytest.raises(ValueError, match="max_depth must be a positive int"):
        TransformLimits(max_depth=bad)


def test_unknown_transformation_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown transformation 'if_else_to_if_if'; known: \[.*'swap_operands'"):
        transform_many(["int f;"], ["if_else_to_if_if"], "c")


def test_a_new_module_in_the_package_is_discovered_with_no_other_edit() -> None:
    folder = Path(transforms_pkg.__file__).parent
    new = folder / "swap_operands_fuzzcopy.py"
    module = "mlflow_metacompress.transforms.swap_operands_fuzzcopy"
    text = (folder / "swap_operands.py").read_text(encoding="utf-8")
    assert text.count('"swap_operands"') == 1  # the name is declared exactly once
    try:
        new.write_text(text.replace('"swap_operands"', '"swap_operands_copy"'), encoding="utf-8")
        base.load_all(refresh=True)
        for lang in ("c", "java", "python"):
            assert "swap_operands_copy" in list_transforms(lang)
        code = "int f(int a, int b) { return a < b; }"
        assert apply_transform(code, "swap_operands_copy", "c") == "int f(int a, int b) { return b > a; }"
        assert apply_transform(code, "swap_operands_copy", "c") == apply_transform(code, "swap_operands", "c")
    finally:
        new.unlink(missing_ok=True)
        (folder / "__pycache__" / f"swap_operands_fuzzcopy.{sys.implementation.cache_tag}.pyc").unlink(missing_ok=True)
        sys.modules.pop(module, None)
        base.load_all(refresh=True)
    assert "swap_operands_copy" not in list_transforms("c")


def test_a_module_that_fails_to_import_is_not_swallowed() -> None:
    folder = Path(transforms_pkg.__file__).parent
    new = folder / "broken_fuzzcopy.py"
    try:
        new.write_text("import mlflow_metacompress.transforms.no_such_helper\n", encoding="utf-8")
        with pytest.raises(ModuleNotFoundError, match="no_such_helper"):
            base.load_all(refresh=True)
    finally:
        new.unlink(missing_ok=True)
        sys.modules.pop("mlflow_metacompress.transforms.broken_fuzzcopy", None)
        base.load_all(refresh=True)
    assert "swap_operands" in list_transforms("c")


def test_seeded_results_do_not_depend_on_call_order() -> None:
    code = _many_locals_c(40)
    names = list_transforms("c")
    forward = transform_many([code], names, "c", seed=2)
    backward = transform_many([code], list(reversed(names)), "c", seed=2)
    assert all(forward[n][0].code == backward[n][0].code for n in names)


class _NaiveEdits:
    """The original quadratic edit list: the oracle for the sorted implementation."""

    def __init__(self, data: bytes) -> None:
        self.data, self.items, self.seq = data, [], 0

    def render(self, start: int, end: int) -> str:
        inside = sorted(it for it in self.items if start <= it[0] and it[1] <= end)
        parts, pos = [], start
        for s, e, _, text in inside:
            if s < pos:
                raise TransformError("overlapping edits")
            parts += [self.data[pos:s].decode(), text]
            pos = e
        return "".join(parts + [self.data[pos:end].decode()])

    def overlaps(self, start: int, end: int) -> bool:
        return any(
            s < end and start < e and not (start <= s and e <= end) and not (s <= start and end <= e)
            for s, e, _, _ in self.items
        )

    def replace(self, start: int, end: int, text: str) -> None:
        self.items = [it for it in self.items if not (start <= it[0] and it[1] <= end and start < end)]
        self.items.append((start, end, self.seq, text))
        self.seq += 1


def test_sorted_edits_match_the_naive_edit_list() -> None:
    import random

    from mlflow_metacompress.transforms._edits import Edits

    rng = random.Random(5)
    for trial in range(300):
        data = bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(0, 40)))
        fast, slow = Edits(data), _NaiveEdits(data)
        for step in range(rng.randint(1, 12)):
            i, j = sorted(rng.randrange(len(data) + 1) for _ in range(2))
            if rng.random() < 0.3:
                j = i  # an insertion
            assert fast.overlaps(i, j) == slow.overlaps(i, j), (trial, step)
            try:
                expected = slow.render(i, j)
            except TransformError:
                with pytest.raises(TransformError):
                    fast.render(i, j)
            else:
                assert fast.render(i, j) == expected
            text = f"<{step}>"
            fast.replace(i, j, text) if i < j else fast.insert(i, text)
            slow.replace(i, j, text)
