"""Juliet-style good/bad C templates for ten CWE classes.

Modelled on the NIST Juliet C/C++ test suite (Boland & Black, "Juliet 1.1 C/C++ and
Java Test Suite", IEEE Computer 2012): each CWE has one template whose ``bad`` variant
contains the flaw and whose ``good`` variant is the same code with the flaw fixed. The
two variants differ in a check, a bound, an argument or a statement order, never in the
vocabulary alone: fixes come in several forms, and some flawed variants carry checks
that do not prevent the flaw (a length check before a command is built, an
off-by-some bound).

A template is ``template(cr, bad, fail) -> (params, statements)``: ``cr`` is a
:class:`~.c_random.CRandom`, ``fail`` the early-exit statement of the enclosing function
(``return -1;`` or ``return;``), ``params`` the parameter declarations and
``statements`` a list of top-level statements, each a list of lines.
"""

from __future__ import annotations

from typing import Callable

from .c_random import CRandom

Template = Callable[[CRandom, bool, str], tuple[list[str], list[list[str]]]]


def cwe121_stack_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v, size = cr.names(buf="buf", src="str", i="idx", n="len"), cr.pick((8, 16, 32, 64))
    form = cr.rng.randrange(3)
    if form == 0:
        copy = ([f"strcpy({v['buf']}, {v['src']});"] if bad else
                cr.pick(([f"strncpy({v['buf']}, {v['src']}, {size} - 1);", f"{v['buf']}[{size} - 1] = '\\0';"],
                         [f'snprintf({v["buf"]}, sizeof({v["buf"]}), "%s", {v["src"]});'])))
        return [f"const char *{v['src']}"], [[f"char {v['buf']}[{size}];"], copy, [f"print_line({v['buf']});"]]
    if form == 1:
        bound = cr.pick((f"<= {size}", f"< {size} + 1")) if bad else cr.pick((f"< {size}", f"<= {size} - 1"))
        return [f"int {v['n']}"], [
            [f"int {v['buf']}[{size}];", f"int {v['i']};"],
            [f"for ({v['i']} = 0; {v['i']} {bound}; {v['i']}++) {{", f"    {v['buf']}[{v['i']}] = {v['n']} + {v['i']};", "}"],
            [f"print_int({v['buf']}[0]);"]]
    check = (cr.pick(([], [f"if ({v['n']} > {size * 4}) {{", f"    {fail}", "}"])) if bad else
             [f"if ({v['n']} > sizeof({v['buf']})) {{", f"    {fail}", "}"])
    return [f"const char *{v['src']}", f"size_t {v['n']}"], [
        [f"char {v['buf']}[{size}];"], check, [f"memcpy({v['buf']}, {v['src']}, {v['n']});"],
        [f"print_int({v['buf']}[0]);"]]


def cwe122_heap_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", i="idx", n="len")
    null_check = [f"if ({v['p']} == NULL) {{", f"    {fail}", "}"]
    if cr.chance(0.5):
        size = f"strlen({v['src']})" if bad else cr.pick((f"strlen({v['src']}) + 1", f"1 + strlen({v['src']})"))
        return [f"const char *{v['src']}"], [
            [f"char *{v['p']} = (char *)malloc({size});"], null_check, [f"strcpy({v['p']}, {v['src']});"],
            [f"print_line({v['p']});"], [f"free({v['p']});"]]
    bound = f"<= {v['n']}" if bad else cr.pick((f"< {v['n']}", f"<= {v['n']} - 1"))
    return [f"int {v['n']}"], [
        [f"if ({v['n']} <= 0 || {v['n']} > 1024) {{", f"    {fail}", "}"],
        [f"int *{v['p']} = (int *)malloc({v['n']} * sizeof(int));"], null_check,
        [f"for (int {v['i']} = 0; {v['i']} {bound}; {v['i']}++) {{", f"    {v['p']}[{v['i']}] = {v['i']};", "}"],
        [f"print_int({v['p']}[0]);"], [f"free({v['p']});"]]


def cwe476_null_deref(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", n="len")
    if cr.chance(0.5):
        use = [[f"{v['p']}[0] = {v['n']};"], [f"print_int({v['p']}[0]);"]]
        guard = [] if bad else [cr.pick(([f"if ({v['p']} == NULL) {{", f"    {fail}", "}"],
                                         [f"if (!{v['p']}) {{", f"    {fail}", "}"]))]
        return [f"int {v['n']}"], [[f"int *{v['p']} = (int *)malloc(4 * sizeof(int));"], *guard, *use,
                                   [f"free({v['p']});"]]
    use = f"print_int((int)strlen({v['p']}));"
    sink = [use] if bad else cr.pick(([f"if ({v['p']} != NULL) {{", f"    {use}", "}"],
                                      [f"if ({v['p']} == NULL) {{", f"    {fail}", "}", use]))
    return [f"const char *{v['src']}"], [
        [f"const char *{v['p']} = NULL;"],
        [f"if (rand_value() > {cr.rng.randrange(5, 50)}) {{", f"    {v['p']} = {v['src']};", "}"], sink]


def cwe190_integer_overflow(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(a="num", b="num", r="acc")
    if cr.chance(0.5):
        k = cr.rng.randrange(1, 100)
        weak = cr.pick(([], [[f"if ({v['a']} > INT_MAX) {{", f"    {fail}", "}"]]))  # can never fire
        guard = weak if bad else [[f"if ({v['a']} > INT_MAX - {k}) {{", f"    {fail}", "}"]]
        return [f"int {v['a']}"], [*guard, [f"int {v['r']} = {v['a']} + {k};"], [f"print_int({v['r']});"]]
    weak = cr.pick(([], [[f"if ({v['a']} > INT_MAX / 2) {{", f"    {fail}", "}"]]))  # insufficient
    guard = weak if bad else [[f"if ({v['a']} > 0 && {v['b']} > 0 && {v['a']} > INT_MAX / {v['b']}) {{",
                               f"    {fail}", "}"]]
    pre = [[f"if ({v['a']} <= 0 || {v['b']} <= 0) {{", f"    {fail}", "}"]]
    return [f"int {v['a']}", f"int {v['b']}"], [*pre, *guard, [f"int {v['r']} = {v['a']} * {v['b']};"],
                                                [f"print_int({v['r']});"]]


def cwe415_double_free(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", n="len")
    second = ([f"free({v['p']});"] if bad else
              cr.pick(([f"{v['p']} = NULL;", f"free({v['p']});"], [f"{v['p']} = NULL;"], [])))
    if cr.chance(0.4):
        second = [f"if ({v['n']} > {cr.rng.randrange(1, 9)}) {{", *("    " + s for s in second), "}"] if second else []
    return [f"int {v['n']}"], [
        [f"if ({v['n']} <= 0 || {v['n']} > 4096) {{", f"    {fail}", "}"],
        [f"char *{v['p']} = (char *)malloc({v['n']} + 1);"], [f"if ({v['p']} == NULL) {{", f"    {fail}", "}"],
        [f"memset({v['p']}, 'A', {v['n']});", f"{v['p']}[{v['n']}] = '\\0';"], [f"print_line({v['p']});"],
        [f"free({v['p']});"], second]


def cwe416_use_after_free(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", src="str", n="len")
    use = cr.pick(([f"print_line({v['p']});"], [f"print_int({v['p']}[0]);"], [f"log_event({v['p']}, 1);"]))
    free_ = [f"free({v['p']});"]
    tail = [free_, use] if bad else [use, free_]
    return [f"const char *{v['src']}"], [
        [f"size_t {v['n']} = strlen({v['src']});"], [f"char *{v['p']} = (char *)malloc({v['n']} + 1);"],
        [f"if ({v['p']} == NULL) {{", f"    {fail}", "}"], [f"memcpy({v['p']}, {v['src']}, {v['n']} + 1);"], *tail]


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
    length = [f"if (strlen({s}) > 200) {{", f"    {fail}", "}"]
    if bad:  # none, or checks that leave '|', '&', '$(' … through
        semi = [f"if (strchr({s}, ';') != NULL) {{", f"    {fail}", "}"]
        checks = cr.pick(([], [length], [semi], [length, semi]))
    elif cr.chance(0.5):
        cond = cr.pick((f"{s}[{v['i']}] != '\\0'", f"{s}[{v['i']}]"))
        checks = [[f"for (size_t {v['i']} = 0; {cond}; {v['i']}++) {{",
                   f"    if (!isalnum((unsigned char){s}[{v['i']}])) {{", f"        {fail}", "    }", "}"]]
    else:
        checks = [[f'if (strpbrk({s}, ";|&$`<>") != NULL) {{', f"    {fail}", "}"]]
    if not bad and cr.chance(0.5):
        checks.insert(0, length)
    prog = cr.pick(("ls", "cat", "wc -l", "file"))
    return [f"const char *{s}"], [
        *checks, [f"char {v['cmd']}[256];"], [f'snprintf({v["cmd"]}, sizeof({v["cmd"]}), "{prog} %.200s", {s});'],
        [f"system({v['cmd']});"]]


def cwe401_memory_leak(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(p="ptr", n="len")
    p = v["p"]
    alloc = [[f"if ({v['n']} <= 0 || {v['n']} > 4096) {{", f"    {fail}", "}"],
             [f"char *{p} = (char *)malloc({v['n']});"], [f"if ({p} == NULL) {{", f"    {fail}", "}"],
             [f"memset({p}, 0, {v['n']});"]]
    if cr.chance(0.5):  # early exit leaks in the bad variant
        early = [f"if (rand_value() % {cr.rng.randrange(2, 7)} == 0) {{", *([] if bad else [f"    free({p});"]),
                 f"    {fail}", "}"]
        return [f"int {v['n']}"], [*alloc, early, [f"print_int({p}[0]);"], [f"free({p});"]]
    end = [[f"{p} = NULL;"]] if bad else [[f"free({p});"], *([[f"{p} = NULL;"]] if cr.chance(0.5) else [])]
    return [f"int {v['n']}"], [*alloc, [f"print_line({p});"], *end]


def cwe369_divide_by_zero(cr: CRandom, bad: bool, fail: str) -> tuple[list[str], list[list[str]]]:
    v = cr.names(a="num", b="num", r="acc")
    op = cr.pick(("/", "%"))
    if bad:
        guard = cr.pick(([], [[f"if ({v['b']} < 0) {{", f"    {fail}", "}"]]))
    else:
        guard = [cr.pick(([f"if ({v['b']} == 0) {{", f"    {fail}", "}"], [f"if (!{v['b']}) {{", f"    {fail}", "}"],
                          [f"if ({v['b']} <= 0) {{", f"    {fail}", "}"]))]
    return [f"int {v['a']}", f"int {v['b']}"], [*guard, [f"int {v['r']} = {v['a']} {op} {v['b']};"],
                                                [f"print_int({v['r']});"]]


TEMPLATES: dict[str, Template] = {
    "CWE-121": cwe121_stack_overflow, "CWE-122": cwe122_heap_overflow, "CWE-476": cwe476_null_deref,
    "CWE-190": cwe190_integer_overflow, "CWE-415": cwe415_double_free, "CWE-416": cwe416_use_after_free,
    "CWE-134": cwe134_format_string, "CWE-78": cwe78_command_injection, "CWE-401": cwe401_memory_leak,
    "CWE-369": cwe369_divide_by_zero,
}
