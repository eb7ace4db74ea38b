"""Public API and per-transformation rules of issue 3, on code the tests contain."""

from __future__ import annotations

import re
import sys

import pytest

from mlflow_metacompress.transforms import (
    LANGUAGES,
    TransformError,
    TransformStatus,
    apply_transform,
    detect_language,
    list_transforms,
    transform,
    transform_many,
)
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import parses_cleanly, run
from tests.support.programs import SNIPPETS

# the minimum set the package must provide; tests iterate the registry (list_transforms)
MINIMUM = {
    "rename_variables",
    "rename_function",
    "insert_dead_code",
    "for_to_while",
    "while_to_for",
    "swap_if_else",
    "swap_operands",
    "expand_compound_assignment",
    "literal_to_constant",
    "compose",
}


def test_registry_and_languages() -> None:
    for lang in LANGUAGES:
        names = list_transforms(lang)
        assert MINIMUM <= set(names) and names == sorted(names)
    with pytest.raises(ValueError, match=r"unknown transformation 'no_such'; known: \[.*'swap_if_else'"):
        transform("int x;", "no_such", "c")
    with pytest.raises(ValueError, match="unsupported language"):
        list_transforms("rust")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_transformation_changes_snippets_into_parsable_code(lang: str) -> None:
    for code in SNIPPETS[lang]:
        src = Source(code, lang)
        for name in list_transforms(lang):
            result = run(src, name, 0, verify=False)
            assert parses_cleanly(result.code, lang), (name, result.code)
    changed = {
        n for n in list_transforms(lang) if transform(SNIPPETS[lang][0], n, lang).status is TransformStatus.CHANGED
    }
    assert changed >= MINIMUM


def test_statuses_errors_and_determinism() -> None:
    with pytest.raises(TransformError):
        apply_transform("int f( { return", "swap_if_else", "c")
    res = transform("int f(void) { return 1; }", "swap_if_else", "c")
    assert res.status is TransformStatus.NOT_APPLICABLE and res.code == "int f(void) { return 1; }"
    code = SNIPPETS["c"][0]
    assert apply_transform(code, "compose", "c", seed=5) == apply_transform(code, "compose", "c", seed=5)
    outs = {apply_transform(code, "rename_variables", "c", seed=s) for s in range(6)}
    assert len(outs) > 1  # the seed matters


def test_transform_many_parses_once_and_never_raises() -> None:
    codes = [SNIPPETS["c"][0], "int f( {", SNIPPETS["c"][1], ""]
    out = transform_many(codes, ["swap_if_else", "rename_variables"], "c", seed=1)
    statuses = [r.status for r in out["swap_if_else"]]
    assert statuses == [
        TransformStatus.CHANGED,
        TransformStatus.PARSE_ERROR,
        TransformStatus.NOT_APPLICABLE,
        TransformStatus.NOT_APPLICABLE,
    ]
    assert out["rename_variables"][0].code == apply_transform(codes[0], "rename_variables", "c", seed=1)
    assert out["swap_if_else"][1].code == "int f( {"


def test_detect_language() -> None:
    assert detect_language(SNIPPETS["python"][0]) == "python"
    assert detect_language("public static String f(String s) { return s.trim(); }") == "java"
    assert detect_language("static int f(struct s *p) { return p->x; }") == "c"


def test_package_import_is_light() -> None:
    import subprocess

    code = (
        "import sys, mlflow_metacompress.transforms as t; t.list_transforms('c'); print('tree_sitter' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---- rules from "Pitfalls measured on real code" ------------------------------------


def test_swap_if_else_braces_dangling_else() -> None:
    out = apply_transform("void f(int a, int b) { if (a) x(); else if (b) y(); else z(); }", "swap_if_else", "c")
    assert out == "void f(int a, int b) { if (!(a)) { if (!(b)) { z(); } else { y(); } } else { x(); } }"


def test_python_swap_nests_elif_chain() -> None:
    code = (
        "def f(a):\n    if a > 1:\n        return 1\n    elif a < 0:\n        return 2\n    else:\n        return 3\n"
    )
    out = apply_transform(code, "swap_if_else", "python")
    ns: dict = {}
    exec(out, ns)  # noqa: S102 - oracle
    assert [ns["f"](v) for v in (5, -3, 0)] == [1, 2, 3]
    assert "if not (a > 1):\n        if a < 0:" in out


def test_expand_parenthesises_and_keeps_java_narrowing() -> None:
    assert "x = x * (y + z);" in apply_transform(
        "void f(int x,int y,int z){ x *= y + z; }", "expand_compound_assignment", "c"
    )
    out = apply_transform(
        "void f(){ short s = 1; s += 1; byte b = 2; b++; Foo q = g(); q.v += 1; }", "expand_compound_assignment", "java"
    )
    assert "s = (short) (s + 1);" in out and "b = (byte) (b + 1);" in out and "q.v += 1;" in out
    py = apply_transform("def f(lst):\n    n = 0\n    n += 2\n    lst += [1]\n", "expand_compound_assignment", "python")
    assert "n = n + 2" in py and "lst += [1]" in py


def test_swap_operands_respects_side_effects_and_chains() -> None:
    assert (
        apply_transform("int f(int a){ return g(a) < 3 || a < 4; }", "swap_operands", "c")
        == "int f(int a){ return g(a) < 3 || 4 > a; }"
    )
    assert (
        transform("def f(a, b, c):\n    return a < b < c or a in b\n", "swap_operands", "python").status
        is TransformStatus.NOT_APPLICABLE
    )
    java = "boolean f(List<Integer> xs, int n){ return xs.size() < n; }"
    assert transform(java, "swap_operands", "java").status is TransformStatus.NOT_APPLICABLE


def test_literal_to_constant_leaves_forbidden_places() -> None:
    code = (
        'static int tbl[3] = {1, 2, 3};\nint f(int n) {\n    static int z = 7;\n    char s[] = "abc";\n'
        "    int a[8];\n    char *p = 0;\n    switch (n) { case 8: return 8; }\n    return n * 8 + z;\n}\n"
    )
    out = apply_transform(code, "literal_to_constant", "c")
    assert "static int tbl[3] = {1, 2, 3};" in out and "static int z = 7;" in out and "int a[8];" in out
    assert "case 8: return" in out and "char *p = 0;" in out and 'char s[] = "abc";' in out
    name = re.search(r"const int (\w+) = 8;", out).group(1)
    assert f"return n * {name} + z;" in out and f"return {name};" in out
    assert "const unsigned int" in apply_transform(
        "unsigned f(unsigned x){ return x * 3u; }", "literal_to_constant", "c"
    )
    py = apply_transform(
        "def f(n):\n    match n:\n        case 4:\n            return 4\n", "literal_to_constant", "python"
    )
    assert "case 4:" in py


def test_for_to_while_skips_continue_in_switch_and_scopes_init() -> None:
    code = "int f(int n){ int s=0; for (int i=0;i<n;i++) { switch (i) { case 1: continue; } s++; } return s; }"
    assert transform(code, "for_to_while", "c").status is TransformStatus.NOT_APPLICABLE
    out = apply_transform(
        "int f(int n){ int s=0; for (int i=0;i<n;i++) { int i = 3; s += i; } return s; }", "for_to_while", "c"
    )
    assert out == "int f(int n){ int s=0; { int i=0; while (i<n) { { int i = 3; s += i; } i++; } } return s; }"
    java = "int f(int n){ for (int i=0;i<n;i++) { return i; } return 0; }"
    assert transform(java, "for_to_while", "java").status is TransformStatus.NOT_APPLICABLE


def test_dead_code_after_super_call_and_never_after_return() -> None:
    out = apply_transform("class A { A(int x) { super(); y = x; } }", "insert_dead_code", "java")
    assert out.index("super();") < out.index("if (false)")


def test_rename_function_never_renames_main_or_overrides() -> None:
    code = 'class A { @Override public String toString() { return "a"; } public static void main(String[] a) {} }'
    assert transform(code, "rename_function", "java").status is TransformStatus.NOT_APPLICABLE
