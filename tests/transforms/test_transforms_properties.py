"""Property-based tests (hypothesis) on generated C, Java and Python functions: no crash,
determinism for a fixed seed, outputs that parse, and renaming that never merges names."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlflow_metacompress.transforms import (
    TransformError,
    TransformStatus,
    all_identifiers,
    apply_transform,
    is_valid_identifier,
    list_transforms,
    renamable_identifiers,
    rename_identifiers,
    transform_many,
)
from mlflow_metacompress.transforms.base import parses_cleanly

VARS = ["a", "b", "c", "i", "n", "tmp", "acc"]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def expr(draw, depth: int = 0) -> str:
    if depth > 1 or draw(st.booleans()):
        return draw(st.sampled_from(VARS)) if draw(st.booleans()) else str(draw(st.integers(1, 99)))
    op = draw(st.sampled_from(["+", "-", "*", "%", "&"]))
    return f"({draw(expr(depth + 1))} {op} {draw(expr(depth + 1))})"


@st.composite
def cond(draw) -> str:
    return f"{draw(expr())} {draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} {draw(expr())}"


@st.composite
def braced_stmts(draw, depth: int = 0) -> list[str]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["assign", "compound", "incr", "if", "for", "while"] if depth < 2 else ["assign", "compound", "incr"]
            )
        )
        v = draw(st.sampled_from(VARS))
        if kind == "assign":
            out.append(f"{v} = {draw(expr())};")
        elif kind == "compound":
            out.append(f"{v} {draw(st.sampled_from(['+=', '-=', '*=', '|=']))} {draw(expr())};")
        elif kind == "incr":
            out.append(f"{v}{draw(st.sampled_from(['++', '--']))};")
        elif kind == "if":
            body = " ".join(draw(braced_stmts(depth + 1)))
            other = " else { " + " ".join(draw(braced_stmts(depth + 1))) + " }" if draw(st.booleans()) else ""
            out.append(f"if ({draw(cond())}) {{ {body} }}{other}")
        elif kind == "for":
            out.append(
                f"for (i = 0; i < {draw(st.integers(1, 9))}; i++) {{ {' '.join(draw(braced_stmts(depth + 1)))} }}"
            )
        else:
            out.append(f"while ({draw(cond())}) {{ {' '.join(draw(braced_stmts(depth + 1)))} break; }}")
    return out


@st.composite
def braced_program(draw) -> str:
    body = "\n    ".join(draw(braced_stmts()))
    return (
        f"int f(int a, int b) {{\n    int c = 0, i = 0, n = 3, tmp = 1, acc = 0;\n    {body}\n"
        f"    return c + acc;\n}}\nint g(int x) {{ return f(x, 2) + f(1, x); }}\n"
    )


@st.composite
def py_stmts(draw, indent: str = "    ", depth: int = 0) -> list[str]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["assign", "compound", "if", "for", "while"] if depth < 2 else ["assign", "compound"])
        )
        v = draw(st.sampled_from(VARS))
        inner = indent + "    "
        if kind == "assign":
            out.append(f"{indent}{v} = {draw(expr())}")
        elif kind == "compound":
            out.append(f"{indent}{v} {draw(st.sampled_from(['+=', '-=', '*=']))} {draw(expr())}")
        elif kind == "if":
            text = f"{indent}if {draw(cond())}:\n" + "\n".join(draw(py_stmts(inner, depth + 1)))
            if draw(st.booleans()):
                text += f"\n{indent}elif {draw(cond())}:\n" + "\n".join(draw(py_stmts(inner, depth + 1)))
            if draw(st.booleans()):
                text += f"\n{indent}else:\n" + "\n".join(draw(py_stmts(inner, depth + 1)))
            out.append(text)
        elif kind == "for":
            out.append(
                f"{indent}for i in range({draw(st.integers(1, 9))}):\n" + "\n".join(draw(py_stmts(inner, depth + 1)))
            )
        else:
            out.append(
                f"{indent}while {draw(cond())}:\n" + "\n".join(draw(py_stmts(inner, depth + 1))) + f"\n{inner}break"
            )
    return out


@st.composite
def py_program(draw) -> str:
    body = "\n".join(draw(py_stmts()))
    return (
        f"def f(a, b):\n    c, i, n, tmp, acc = 0, 0, 3, 1, 0\n{body}\n    return c + acc\n\n\n"
        f"def g(x):\n    return f(x, 2) + f(1, b=x)\n"
    )


PROGRAMS = {"c": braced_program(), "java": braced_program(), "python": py_program()}


def _check_no_crash_and_parse(code: str, language: str, seed: int) -> None:
    assert parses_cleanly(code, language), code
    names = list_transforms(language)
    results = transform_many([code], names, language, seed=seed)
    for name in names:
        (res,) = results[name]
        assert res.status in (TransformStatus.CHANGED, TransformStatus.NOT_APPLICABLE)
        assert parses_cleanly(res.code, language), (name, res.code)
        assert res.code == apply_transform(code, name, language, seed=seed)  # deterministic per seed


@pytest.mark.slow
@SETTINGS
@given(code=PROGRAMS["c"], seed=st.integers(0, 2**16))
def test_c_no_crash_deterministic_parsable(code: str, seed: int) -> None:
    _check_no_crash_and_parse(code, "c", seed)


@SETTINGS
@given(code=PROGRAMS["java"], seed=st.integers(0, 2**16))
def test_java_no_crash_deterministic_parsable(code: str, seed: int) -> None:
    _check_no_crash_and_parse(code, "java", seed)


@pytest.mark.slow
@SETTINGS
@given(code=PROGRAMS["python"], seed=st.integers(0, 2**16))
def test_python_no_crash_deterministic_parsable(code: str, seed: int) -> None:
    _check_no_crash_and_parse(code, "python", seed)


@SETTINGS
@given(lang=st.sampled_from(["c", "java", "python"]), data=st.data(), seed=st.integers(0, 1000))
def test_renaming_never_introduces_a_collision(lang: str, data, seed: int) -> None:
    code = data.draw(PROGRAMS[lang])
    before = all_identifiers(code, lang)
    for name in ("rename_variables", "rename_function"):
        out = apply_transform(code, name, lang, seed=seed)
        assert len(all_identifiers(out, lang)) == len(before)  # a merge would lose a name
    # arbitrary requested names: either refused, or a bijective rename
    targets = renamable_identifiers(code, lang)
    new = data.draw(
        st.lists(
            st.sampled_from(VARS + ["f", "g", "x", "y", "while", "len", "q1", "z_2", "2bad"]),
            min_size=len(targets),
            max_size=len(targets),
        )
    )
    mapping = dict(zip(targets, new, strict=True))
    changed = {k: v for k, v in mapping.items() if k != v}
    should_fail = (
        any(not is_valid_identifier(v, lang) for v in changed.values())
        or bool(set(changed.values()) & before)
        or len(set(changed.values())) < len(changed)
    )
    try:
        out = rename_identifiers(code, lang, mapping)
    except TransformError:
        assert should_fail, mapping
        return
    assert not should_fail, mapping
    assert len(all_identifiers(out, lang)) == len(before)
    assert set(changed.values()) <= all_identifiers(out, lang)
    assert parses_cleanly(out, lang)
