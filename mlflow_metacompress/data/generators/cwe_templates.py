"""Juliet-style good/bad C templates for ten CWE classes.

Modelled on the NIST Juliet C/C++ test suite (Boland & Black, "Juliet 1.1 C/C++ and
Java Test Suite", IEEE Computer 2012): each CWE has one template whose ``bad`` variant
contains the flaw and whose ``good`` variant is the same code with the flaw fixed. The
two variants differ in a check, a bound, an argument or a statement order, never in the
vocabulary alone: fixes come in several forms, and some flawed variants carry checks
that do not prevent the flaw (a length check before a command is built, a sign check
before a division, an ``INT_MAX`` bound that can never fire). Where a flaw is the absence
of a statement, the flawed and fixed variants still differ in a statement each carries:
the overflow and divide-by-zero flaws always carry their insufficient check, a leak
overwrites its only reference (with a new ``malloc``, fixed by a second pointer, or with
``realloc``'s result, fixed through a temporary) and
a use after free is fixed by the
use coming first and the dangling pointer being cleared (CERT MEM01-C). A scratch 2-layer
teacher could not learn order-only and absence-only variants from thousands of rows
(CWE-416 and CWE-401 near chance; issue 22).

The flaw and its fix are *local*: the statements that make the difference (a sink and
the guard or bound that protects it, a ``free`` and the use that follows it) form one
top-level statement, so the label-independent noise of :mod:`.c_random` never lands
between them, and each CWE has at most three forms with one or two fixes each. As in
Juliet, where detectors learn the flaw from a fixed neighbourhood of tokens, this keeps
the label in the text a small classifier reads: a bag of token n-grams separates the
classes (``tests/data/test_generators.py`` checks it with a logistic regression), while no
single token does.

A template is ``template(cr, bad, fail) -> (params, statements)``: ``cr`` is a
:class:`~.c_random.CRandom`, ``fail`` the early-exit statement of the enclosing function
(``return -1;`` or ``return;``), ``params`` the parameter declarations and
``statements`` a list of top-level statements, each a list of lines.
"""

from __future__ import annotations

from collections.abc import Callable

from .c_random import CRandom

Template = Callable[[CRandom, bool, str], tuple[list[str], list[list[str]]]]


def _guard(cond: str, fail: str) -> list[str]:
    return [f"if ({cond}) {{", f"    {fail}", "}"]


def cwe121_stack_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v, size = cr.names(buf="buf", src="str", i="idx", n="len"), cr.pick((16, 32, 64))
    b, s = v["buf"], v["src"]
    form = cr.rng.randrange(3)
    if form == 0:  # unbounded copy of a caller's string
        copy = (
            [f"strcpy({b}, {s});"]
            if bad
            else cr.pick(
                (
                    [f"strncpy({b}, {s}, sizeof({b}) - 1);", f"{b}[sizeof({b}) - 1] = '\\0';"],
                    [f'snprintf({b}, sizeof({b}), "%s", {s});'],
                )
            )
        )
        return [f"const char *{s}"], [[f"char {b}[{size}];", *copy], [f"print_line({b});"]]
    if form == 1:  # off-by-one loop bound
        bound = f"<= {size}" if bad else f"< {size}"
        return [f"int {v['n']}"], [
            [
                f"int {b}[{size}];",
                f"for (int {v['i']} = 0; {v['i']} {bound}; {v['i']}++) {{",
                f"    {b}[{v['i']}] = {v['n']} + {v['i']};",
                "}",
            ],
            [f"print_int({b}[0]);"],
        ]
    check = [] if bad else _guard(f"{v['n']} > sizeof({b})", fail)  # caller's length, unchecked
    return [f"const char *{s}", f"size_t {v['n']}"], [
        [f"char {b}[{size}];", *check, f"memcpy({b}, {s}, {v['n']});"],
        [f"print_int({b}[0]);"],
    ]


def cwe122_heap_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", i="idx", n="len")
    p = v["p"]
    null_check = _guard(f"{p} == NULL", fail)
    if cr.chance(0.5):  # no room for the terminator
        size = f"strlen({v['src']})" if bad else cr.pick((f"strlen({v['src']}) + 1", f"1 + strlen({v['src']})"))
        return [f"const char *{v['src']}"], [
            [f"char *{p} = (char *)malloc({size});"],
            null_check,
            [f"strcpy({p}, {v['src']});"],
            [f"print_line({p});"],
            [f"free({p});"],
        ]
    bound = f"<= {v['n']}" if bad else f"< {v['n']}"  # one element past the allocation
    return [f"int {v['n']}"], [
        _guard(f"{v['n']} <= 0 || {v['n']} > 1024", fail),
        [f"int *{p} = (int *)malloc({v['n']} * sizeof(int));"],
        null_check,
        [f"for (int {v['i']} = 0; {v['i']} {bound}; {v['i']}++) {{", f"    {p}[{v['i']}] = {v['i']};", "}"],
        [f"print_int({p}[0]);"],
        [f"free({p});"],
    ]


def cwe476_null_deref(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", n="len")
    p = v["p"]
    if cr.chance(0.5):  # malloc's result used unchecked
        guard = [] if bad else _guard(cr.pick((f"{p} == NULL", f"!{p}")), fail)
        return [f"int {v['n']}"], [
            [f"int *{p} = (int *)malloc(4 * sizeof(int));", *guard, f"{p}[0] = {v['n']};"],
            [f"print_int({p}[0]);"],
            [f"free({p});"],
        ]
    use = f"print_int((int)strlen({p}));"  # a pointer that may still be NULL
    sink = (
        [use] if bad else cr.pick(([f"if ({p} != NULL) {{", f"    {use}", "}"], [*_guard(f"{p} == NULL", fail), use]))
    )
    return [f"const char *{v['src']}"], [
        [f"const char *{p} = NULL;"],
        [f"if (rand_value() > {cr.rng.randrange(5, 50)}) {{", f"    {p} = {v['src']};", "}", *sink],
    ]


def cwe190_integer_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(a="num", b="num", r="acc")
    a, r = v["a"], v["r"]
    if cr.chance(0.5):
        k = cr.rng.randrange(1, 100)
        weak = _guard(f"{a} > INT_MAX", fail)  # can never fire
        guard = weak if bad else _guard(f"{a} > INT_MAX - {k}", fail)
        return [f"int {a}"], [[*guard, f"int {r} = {a} + {k};"], [f"print_int({r});"]]
    weak = _guard(f"{a} > INT_MAX / 2", fail)  # insufficient
    guard = weak if bad else _guard(f"{a} > INT_MAX / {v['b']}", fail)
    return [f"int {a}", f"int {v['b']}"], [
        _guard(f"{a} <= 0 || {v['b']} <= 0", fail),
        [*guard, f"int {r} = {a} * {v['b']};"],
        [f"print_int({r});"],
    ]


def cwe415_double_free(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", n="len")
    p = v["p"]
    second = [f"free({p});"] if bad else cr.pick(([f"{p} = NULL;", f"free({p});"], [f"{p} = NULL;"]))
    if cr.chance(0.4):  # the second release on one path only
        second = [f"if ({v['n']} > {cr.rng.randrange(1, 9)}) {{", *("    " + s for s in second), "}"]
    return [f"int {v['n']}"], [
        _guard(f"{v['n']} <= 0 || {v['n']} > 4096", fail),
        [f"char *{p} = (char *)malloc({v['n']} + 1);"],
        _guard(f"{p} == NULL", fail),
        [f"memset({p}, 'A', {v['n']});", f"{p}[{v['n']}] = '\\0';"],
        [f"print_line({p});"],
        [f"free({p});", *second],
    ]


def cwe416_use_after_free(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", n="len")
    p = v["p"]
    use = cr.pick((f"print_line({p});", f"print_int({p}[0]);", f"log_event({p}, 1);"))
    # the fix uses the memory first and clears the dangling pointer (CERT MEM01-C); the flaw
    # reads it after the release
    tail = [f"free({p});", use] if bad else [use, f"free({p});", f"{p} = NULL;"]
    return [f"const char *{v['src']}"], [
        [f"size_t {v['n']} = strlen({v['src']});"],
        [f"char *{p} = (char *)malloc({v['n']} + 1);"],
        _guard(f"{p} == NULL", fail),
        [f"memcpy({p}, {v['src']}, {v['n']} + 1);", *tail],
    ]


def cwe134_format_string(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(src="str", buf="buf")
    s, b = v["src"], v["buf"]
    form = cr.rng.randrange(3)
    prefix = cr.pick(([], [[f'printf("%s: ", "{cr.word()}");'], [f'fprintf(stderr, "%s\\n", "{cr.word()}");']]))
    if form == 0:
        sink = f"printf({s});" if bad else cr.pick((f'printf("%s\\n", {s});', f'printf("%s", {s});'))
        return [f"const char *{s}"], [[f'log_event("fmt", {cr.rng.randrange(9)});'], *prefix, [sink]]
    if form == 1:
        sink = f"fprintf(stderr, {s});" if bad else f'fprintf(stderr, "%s", {s});'
        return [f"const char *{s}"], [*prefix, [sink]]
    sink = f"snprintf({b}, sizeof({b}), {s});" if bad else f'snprintf({b}, sizeof({b}), "%s", {s});'
    return [f"const char *{s}"], [[f"char {b}[{cr.pick((64, 128))}];"], *prefix, [sink], [f"print_line({b});"]]


def cwe78_command_injection(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(src="str", cmd="buf", i="idx")
    s = v["src"]
    length = _guard(f"strlen({s}) > 200", fail)
    if bad:  # none, or checks that leave '|', '&', '$(' … through
        checks = cr.pick(([], [length], [_guard(f"strchr({s}, ';') != NULL", fail)]))
    elif cr.chance(0.5):
        cond = cr.pick((f"{s}[{v['i']}] != '\\0'", f"{s}[{v['i']}]"))
        checks = [
            [
                f"for (size_t {v['i']} = 0; {cond}; {v['i']}++) {{",
                f"    if (!isalnum((unsigned char){s}[{v['i']}])) {{",
                f"        {fail}",
                "    }",
                "}",
            ]
        ]
    else:
        checks = [_guard(f'strpbrk({s}, ";|&$`<>") != NULL', fail)]
    prog = cr.pick(("ls", "cat", "wc -l", "file"))
    return [f"const char *{s}"], [
        *checks,
        [f"char {v['cmd']}[256];"],
        [f'snprintf({v["cmd"]}, sizeof({v["cmd"]}), "{prog} %.200s", {s});'],
        [f"system({v['cmd']});"],
    ]


def cwe401_memory_leak(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", n="len")
    p = v["p"]
    alloc = [
        _guard(f"{v['n']} <= 0 || {v['n']} > 4096", fail),
        [f"char *{p} = (char *)malloc({v['n']});"],
        _guard(f"{p} == NULL", fail),
        [f"memset({p}, 0, {v['n']});"],
    ]
    if cr.chance(0.5):  # a second allocation overwrites the only reference to the first
        q = p if bad else cr.name("ptr")  # the fix keeps both blocks and releases both
        again = [f"{q} = (char *)malloc({v['n']} * 2);" if bad else f"char *{q} = (char *)malloc({v['n']} * 2);"]
        release = [f"free({q});"] if bad else [f"free({q});", f"free({p});"]
        check = _guard(f"{q} == NULL", fail)
        if not bad:  # the first block is released on the failure path too
            check = [check[0], f"    free({p});", *check[1:]]
        return [f"int {v['n']}"], [*alloc, again, check, [f"print_line({q});"], release]
    # p = realloc(p, …): when realloc fails, the only reference to the block is overwritten
    # with NULL and the block leaks; the fix keeps it in a temporary and releases it (CERT MEM31-C)
    grow, t = f"{v['n']} * 2", cr.name("tmp")
    if bad:
        resize = [f"{p} = (char *)realloc({p}, {grow});", *_guard(f"{p} == NULL", fail)]
    else:
        resize = [
            f"char *{t} = (char *)realloc({p}, {grow});",
            f"if ({t} == NULL) {{",
            f"    free({p});",
            f"    {fail}",
            "}",
            f"{p} = {t};",
        ]
    return [f"int {v['n']}"], [*alloc, resize, [f"print_line({p});"], [f"free({p});"]]


def cwe369_divide_by_zero(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(a="num", b="num", r="acc")
    b = v["b"]
    op = cr.pick(("/", "%"))
    # the flawed check rejects negative divisors only; the fixed one rejects zero
    guard = _guard(f"{b} < 0", fail) if bad else _guard(cr.pick((f"{b} == 0", f"!{b}", f"{b} <= 0")), fail)
    return [f"int {v['a']}", f"int {b}"], [[*guard, f"int {v['r']} = {v['a']} {op} {b};"], [f"print_int({v['r']});"]]


TEMPLATES: dict[str, Template] = {
    "CWE-121": cwe121_stack_overflow,
    "CWE-122": cwe122_heap_overflow,
    "CWE-476": cwe476_null_deref,
    "CWE-190": cwe190_integer_overflow,
    "CWE-415": cwe415_double_free,
    "CWE-416": cwe416_use_after_free,
    "CWE-134": cwe134_format_string,
    "CWE-78": cwe78_command_injection,
    "CWE-401": cwe401_memory_leak,
    "CWE-369": cwe369_divide_by_zero,
}
