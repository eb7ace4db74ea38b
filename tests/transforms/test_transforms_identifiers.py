"""The identifier API (issue 3): which names are renamable and the single renamer."""

from __future__ import annotations

import pytest

from mlflow_metacompress.transforms import (
    KEYWORDS,
    TransformError,
    all_identifiers,
    function_names,
    is_valid_identifier,
    renamable_identifiers,
    rename_identifiers,
)

C_CODE = r"""
#define SQ(v) ((v) * (tmp))
struct node { int x; };
int g;
static int helper(int n);
int helper(int n) {
    struct node *node = 0;
    int i, tmp = 0;
    for (i = 0; i < n; i++) { tmp += i + g; }
    if (node) node->x = 1;
    goto out;
out:
    return n > 0 ? helper(n - 1) + tmp : tmp;
}
int main(void) { int (*fp)(int) = helper; int k = fp(3); printf("%d\n", k); return 0; }
"""


def test_c_renamable_excludes_globals_macros_fields_and_labels() -> None:
    names = renamable_identifiers(C_CODE, "c")
    assert names == ["n", "node", "i", "fp", "k"]  # first-occurrence order
    assert "tmp" not in names  # used by name inside a macro
    assert "g" not in names and "x" not in names and "out" not in names
    assert function_names(C_CODE, "c") == ["helper"]  # never main


def test_c_rename_touches_every_site_but_not_fields_or_struct_tags() -> None:
    out = rename_identifiers(C_CODE, "c", {"node": "nd", "helper": "h2", "n": "m"})
    assert "struct node *nd = 0;" in out and "nd->x = 1;" in out and "struct node { int x; };" in out
    assert "static int h2(int n);" in out  # prototype renamed, its parameter name left alone
    assert "int h2(int m)" in out and "h2(m - 1)" in out and "= h2;" in out
    assert "helper" not in out


def test_rename_rejects_collisions_keywords_and_non_renamable() -> None:
    with pytest.raises(TransformError, match="collides"):
        rename_identifiers(C_CODE, "c", {"i": "tmp"})  # a macro's name
    with pytest.raises(TransformError, match="collides"):
        rename_identifiers(C_CODE, "c", {"i": "node"})  # a struct tag
    with pytest.raises(ValueError, match="not a valid"):
        rename_identifiers(C_CODE, "c", {"i": "while"})
    with pytest.raises(ValueError, match="not a renamable"):
        rename_identifiers(C_CODE, "c", {"g": "gg"})
    with pytest.raises(ValueError, match="same new name"):
        rename_identifiers(C_CODE, "c", {"i": "a1", "k": "a1"})
    with pytest.raises(TransformError):
        rename_identifiers("int f( { return", "c", {"f": "g"})


JAVA_CODE = """public int foo(int a, String s) {
    int b = a + s.length();
    for (int i = 0; i < b; i++) { b += this.x + i + count; }
    java.util.function.IntUnaryOperator op = v -> v + 1;
    return foo(b, s) + Math.max(a, b) + op.applyAsInt(1);
}"""


def test_java_rename_skips_fields_methods_and_types() -> None:
    names = renamable_identifiers(JAVA_CODE, "java")
    assert names == ["a", "s", "b", "i", "op", "v"]
    assert function_names(JAVA_CODE, "java") == ["foo"]
    out = rename_identifiers(JAVA_CODE, "java", {"s": "text", "foo": "bar", "op": "fn"})
    assert "bar(int a, String text)" in out and "text.length()" in out and "return bar(b, text)" in out
    assert "fn.applyAsInt(1)" in out and "this.x" in out


def test_java_override_and_jdk_methods_never_renamed() -> None:
    code = (
        'class A { @Override public String describe() { return "a"; } int helper() { return 1; } '
        "public int compareTo(A o) { return 0; } }"
    )
    assert function_names(code, "java") == ["helper"]


PY_CODE = '''
def f(a, b=2):
    """doc"""
    x = a + b
    y = [x for x in range(3)]
    print(f"{x=}", gg)
    def inner():
        return total
    total = sum(y)
    return inner() + f(a, b=total)
'''


def test_python_excludes_parameters_fstring_debug_and_globals() -> None:
    assert renamable_identifiers(PY_CODE, "python") == ["y", "total"]
    assert function_names(PY_CODE, "python") == ["f", "inner"]
    out = rename_identifiers(PY_CODE, "python", {"total": "tot", "f": "g2"})
    assert "def g2(a, b=2):" in out and "g2(a, b=tot)" in out and "return tot" in out
    assert "tot = sum(y)" in out


def test_python_methods_and_keyword_names_untouched() -> None:
    code = "class K:\n    def run(self, n):\n        acc = 0\n        acc = acc + n\n        return acc\n"
    assert function_names(code, "python") == []
    assert renamable_identifiers(code, "python") == ["acc"]


def test_is_valid_identifier_and_all_identifiers() -> None:
    assert is_valid_identifier("foo_1", "c") and not is_valid_identifier("1foo", "c")
    assert not is_valid_identifier("int", "c") and "int" in KEYWORDS["c"]
    assert not is_valid_identifier("len", "python") and not is_valid_identifier("class", "java")
    assert is_valid_identifier("$x", "java") and not is_valid_identifier("$x", "python")
    names = all_identifiers(C_CODE, "c")
    assert {"node", "x", "out", "tmp", "SQ", "helper", "g", "printf"} <= names
