"""Behaviours for the generated clone task: each is one computation with many C forms.

BigCloneBench (Svajlenko et al., ICSME 2014) labels two fragments clones when they
implement the same functionality; its type-3/4 clones differ in identifiers, loop kind,
statement order and helper extraction. A :class:`Behaviour` here is one such
functionality, written as ``string.Template`` snippets (``$acc``, ``$e``, ``$i`` …, so C
braces need no escaping). Loop behaviours declare an iteration (``range`` or ``cstr``),
accumulators with independent initialisations and updates (rendered in random order),
alternative update forms and an optional helper function to extract; custom behaviours
list whole-body alternatives. Behaviours in one ``family`` share a signature, so a
non-clone pair is not told apart by its parameter list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FAMILIES: dict[str, tuple[tuple[str, str], ...]] = {
    "array": (("const int *", "arr"), ("int", "n")),
    "scalar": (("int", "n"),),
    "pair": (("int", "a"), ("int", "b")),
    "string": (("const char *", "s"),),
}
ROLE_POOLS = {"arr": "arr", "n": "len", "a": "num", "b": "num", "s": "str"}


@dataclass(frozen=True)
class Helper:
    """``static int $h(int $x) { body }`` and the update forms that call it."""

    body: str
    updates: tuple[str, ...]


@dataclass(frozen=True)
class Behaviour:
    name: str
    family: str
    accs: tuple[tuple[str, str], ...] = ()  # (accumulator key, initial value template)
    updates: tuple[tuple[str, ...], ...] = ()  # per accumulator statement: alternative forms
    loop: tuple[str, ...] = ("range", "0", "$n")  # ("range", start, end) or ("cstr",)
    guard: str = ""  # statement before everything, e.g. an early return
    post: tuple[str, ...] = ("return $acc;",)
    order_free: bool = True  # iteration may run backwards
    helper: Helper | None = None
    closed_forms: tuple[str, ...] = ()  # loop-free bodies with the same behaviour
    custom: tuple[str, ...] = field(default=())  # whole-body alternatives (no generic loop)


_POS_GUARD = "if ($n <= 0) {\n    return 0;\n}"
_ARRAY = [
    Behaviour("sum", "array", (("acc", "0"),), (("$acc += $e;", "$acc = $acc + $e;", "$acc = $e + $acc;"),)),
    Behaviour(
        "sum_squares",
        "array",
        (("acc", "0"),),
        (("$acc += $e * $e;", "$acc = $acc + $e * $e;"),),
        helper=Helper("return $x * $x;", ("$acc += $h($e);", "$acc = $acc + $h($e);")),
    ),
    Behaviour(
        "count_positive",
        "array",
        (("acc", "0"),),
        (("if ($e > 0) {\n    $acc++;\n}", "$acc += ($e > 0);", "if (0 < $e) {\n    $acc += 1;\n}"),),
        helper=Helper("return $x > 0;", ("$acc += $h($e);", "if ($h($e)) {\n    $acc++;\n}")),
    ),
    Behaviour(
        "count_negative",
        "array",
        (("acc", "0"),),
        (("if ($e < 0) {\n    $acc++;\n}", "$acc += ($e < 0);", "if (0 > $e) {\n    $acc += 1;\n}"),),
        helper=Helper("return $x < 0;", ("$acc += $h($e);", "if ($h($e)) {\n    $acc++;\n}")),
    ),
    Behaviour(
        "count_even",
        "array",
        (("acc", "0"),),
        (("if ($e % 2 == 0) {\n    $acc++;\n}", "$acc += ($e % 2 == 0);", "if (!($e & 1)) {\n    $acc++;\n}"),),
        helper=Helper("return $x % 2 == 0;", ("$acc += $h($e);",)),
    ),
    Behaviour(
        "sum_positive",
        "array",
        (("acc", "0"),),
        (("if ($e > 0) {\n    $acc += $e;\n}", "$acc += $e > 0 ? $e : 0;"),),
        helper=Helper("return $x > 0 ? $x : 0;", ("$acc += $h($e);",)),
    ),
    Behaviour(
        "sum_abs",
        "array",
        (("acc", "0"),),
        (("$acc += $e < 0 ? -$e : $e;", "if ($e < 0) {\n    $acc -= $e;\n} else {\n    $acc += $e;\n}"),),
        helper=Helper("return $x < 0 ? -$x : $x;", ("$acc += $h($e);",)),
    ),
    Behaviour(
        "maximum",
        "array",
        (("acc", "$arr[0]"),),
        (("if ($e > $acc) {\n    $acc = $e;\n}", "$acc = $e > $acc ? $e : $acc;"),),
        guard=_POS_GUARD,
    ),
    Behaviour(
        "minimum",
        "array",
        (("acc", "$arr[0]"),),
        (("if ($e < $acc) {\n    $acc = $e;\n}", "$acc = $e < $acc ? $e : $acc;"),),
        guard=_POS_GUARD,
    ),
    Behaviour(
        "range_span",
        "array",
        (("hi", "$arr[0]"), ("lo", "$arr[0]")),
        (
            ("if ($e > $hi) {\n    $hi = $e;\n}", "$hi = $e > $hi ? $e : $hi;"),
            ("if ($e < $lo) {\n    $lo = $e;\n}", "$lo = $e < $lo ? $e : $lo;"),
        ),
        guard=_POS_GUARD,
        post=("return $hi - $lo;", "int $acc = $hi - $lo;\nreturn $acc;"),
    ),
    Behaviour(
        "first_negative",
        "array",
        updates=(("if ($e < 0) {\n    return $i;\n}",),),
        post=("return -1;",),
        order_free=False,
    ),
]
_SCALAR = [
    Behaviour(
        "triangular",
        "scalar",
        (("acc", "0"),),
        (("$acc += $i;", "$acc = $acc + $i;"),),
        loop=("range", "1", "$n + 1"),
        guard=_POS_GUARD,
        closed_forms=("return $n * ($n + 1) / 2;", "int $acc = ($n * $n + $n) / 2;\nreturn $acc;"),
    ),
    Behaviour(
        "square_pyramid",
        "scalar",
        (("acc", "0"),),
        (("$acc += $i * $i;", "$acc = $acc + $i * $i;"),),
        loop=("range", "1", "$n + 1"),
        guard=_POS_GUARD,
        helper=Helper("return $x * $x;", ("$acc += $h($i);",)),
        closed_forms=("return $n * ($n + 1) * (2 * $n + 1) / 6;",),
    ),
    Behaviour(
        "factorial", "scalar", (("acc", "1"),), (("$acc *= $i;", "$acc = $acc * $i;"),), loop=("range", "2", "$n + 1")
    ),
    Behaviour(
        "count_divisors",
        "scalar",
        (("acc", "0"),),
        (("if ($n % $i == 0) {\n    $acc++;\n}", "$acc += ($n % $i == 0);"),),
        loop=("range", "1", "$n + 1"),
        guard=_POS_GUARD,
    ),
    Behaviour(
        "digit_sum",
        "scalar",
        custom=(
            "int $acc = 0;\nif ($n < 0) {\n    $n = -$n;\n}\nwhile ($n > 0) {\n    $acc += $n % 10;\n    $n /= 10;\n}\n"
            "return $acc;",
            "int $acc = 0;\nint $t = $n < 0 ? -$n : $n;\nfor (; $t != 0; $t = $t / 10) {\n    $acc = $acc + $t % 10;\n"
            "}\nreturn $acc;",
            "int $t = $n;\nint $acc = 0;\nif ($t < 0) {\n    $t = -$t;\n}\nwhile ($t) {\n    int $x = $t % 10;\n"
            "    $acc += $x;\n    $t = $t / 10;\n}\nreturn $acc;",
        ),
    ),
    Behaviour(
        "fibonacci",
        "scalar",
        custom=(
            "int $x = 0;\nint $y = 1;\nfor (int $i = 0; $i < $n; $i++) {\n    int $t = $x + $y;\n    $x = $y;\n"
            "    $y = $t;\n}\nreturn $x;",
            "int $y = 1;\nint $x = 0;\nint $i = 0;\nwhile ($i < $n) {\n    $y = $x + $y;\n    $x = $y - $x;\n"
            "    $i++;\n}\nreturn $x;",
        ),
    ),
]
_PAIR = [
    Behaviour(
        "gcd",
        "pair",
        custom=(
            "while ($b != 0) {\n    int $t = $a % $b;\n    $a = $b;\n    $b = $t;\n}\nreturn $a;",
            "for (;;) {\n    if ($b == 0) {\n        return $a;\n    }\n    int $t = $b;\n    $b = $a % $b;\n"
            "    $a = $t;\n}",
            "int $x = $a;\nint $y = $b;\nwhile ($y) {\n    int $t = $x % $y;\n    $x = $y;\n    $y = $t;\n}\n"
            "return $x;",
        ),
    ),
    Behaviour(
        "power",
        "pair",
        (("acc", "1"),),
        (("$acc *= $a;", "$acc = $acc * $a;", "$acc = $a * $acc;"),),
        loop=("range", "0", "$b"),
    ),
    Behaviour(
        "range_sum", "pair", (("acc", "0"),), (("$acc += $i;", "$acc = $acc + $i;"),), loop=("range", "$a", "$b")
    ),
    Behaviour(
        "multiply_by_addition",
        "pair",
        (("acc", "0"),),
        (("$acc += $a;", "$acc = $acc + $a;"),),
        loop=("range", "0", "$b"),
        closed_forms=("if ($b <= 0) {\n    return 0;\n}\nreturn $a * $b;",),
    ),
]
_STRING = [
    Behaviour(
        "length",
        "string",
        (("acc", "0"),),
        (("$acc++;", "$acc += 1;", "++$acc;"),),
        loop=("cstr",),
        custom=(
            "const char *$t = $s;\nwhile (*$t) {\n    $t++;\n}\nreturn (int)($t - $s);",
            "int $acc = 0;\nwhile ($s[$acc] != '\\0') {\n    $acc++;\n}\nreturn $acc;",
        ),
    ),
    Behaviour(
        "count_vowels",
        "string",
        (("acc", "0"),),
        (
            (
                'if (strchr("aeiouAEIOU", $e) != NULL) {\n    $acc++;\n}',
                "switch ($e) {\ncase 'a': case 'e': case 'i': case 'o': case 'u':\n"
                "case 'A': case 'E': case 'I': case 'O': case 'U':\n    $acc++;\n    break;\ndefault:\n    break;\n}",
            ),
        ),
        loop=("cstr",),
    ),
    Behaviour(
        "count_upper",
        "string",
        (("acc", "0"),),
        (
            (
                "if (isupper((unsigned char)$e)) {\n    $acc++;\n}",
                "if ($e >= 'A' && $e <= 'Z') {\n    $acc++;\n}",
                "$acc += ($e >= 'A' && $e <= 'Z');",
            ),
        ),
        loop=("cstr",),
        helper=Helper("return $x >= 'A' && $x <= 'Z';", ("$acc += $h($e);",)),
    ),
    Behaviour(
        "count_digits",
        "string",
        (("acc", "0"),),
        (("if (isdigit((unsigned char)$e)) {\n    $acc++;\n}", "if ($e >= '0' && $e <= '9') {\n    $acc++;\n}"),),
        loop=("cstr",),
        helper=Helper("return $x >= '0' && $x <= '9';", ("$acc += $h($e);",)),
    ),
    Behaviour(
        "count_spaces",
        "string",
        (("acc", "0"),),
        (("if ($e == ' ') {\n    $acc++;\n}", "$acc += ($e == ' ');"),),
        loop=("cstr",),
    ),
]
BEHAVIOURS: dict[str, Behaviour] = {b.name: b for b in _ARRAY + _SCALAR + _PAIR + _STRING}
