"""Randomised surface for generated C: identifiers, Juliet-style control-flow wrappers, noise.

The Juliet test suite (NIST SARD, Boland & Black 2012) varies each CWE template over
control-flow variants (``if (GLOBAL_CONST_TRUE)``, ``while (1) { …; break; }``,
``switch``) so that a detector must find the flaw, not the shape. This module supplies
that variation plus identifier choices and benign "noise" statements that reuse the
tokens a fix or a flaw is made of (``NULL`` checks, ``free``, ``strcpy``, format
strings, ``isalnum``, ``INT_MAX``), drawn independently of the label, so no single
surface token gives the label away. Noise reuses tokens, not a flaw's shape: its loops
are bounded with ``<`` (an off-by-one ``<=`` bound is a flaw of CWE-121/122, and noise
that copied it taught the quick teacher that the shape means nothing; issue 22).

Every name a generated function may call or read is declared in :data:`C_PRELUDE`, so
``C_PRELUDE + func`` is a complete translation unit for ``gcc -fsyntax-only``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

C_PRELUDE = """#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int GLOBAL_CONST_TRUE;
extern int global_five;
void print_line(const char *line);
void print_int(int value);
int rand_value(void);
void log_event(const char *tag, int code);
int checksum(const char *data, size_t len);
int global_returns_true(void);
"""

HELPERS = ("print_line", "print_int", "rand_value", "log_event", "checksum", "global_returns_true")
C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int "
    "long register restrict return short signed sizeof static struct switch typedef union unsigned void "
    "volatile while bool true false NULL main".split()
)

POOLS: dict[str, tuple[str, ...]] = {
    "buf": ("buf", "data", "dest", "block", "chunk", "store", "area", "payload", "scratch", "region", "frame", "cell"),
    "ptr": ("p", "ptr", "node", "item", "entry", "obj", "rec", "handle", "cursor", "elem", "slot", "mem"),
    "idx": ("i", "j", "k", "idx", "pos", "n_i", "it", "off", "step", "at"),
    "len": ("len", "size", "count", "total", "nbytes", "amount", "limit", "width", "span", "want"),
    "str": ("input", "src", "text", "line", "arg", "msg", "name", "path", "raw", "word", "spec", "field"),
    "num": ("a", "b", "x", "y", "value", "lhs", "rhs", "factor", "base", "qty", "level", "score"),
    "acc": ("acc", "result", "res", "sum", "out", "ret", "answer", "agg", "tally", "r"),
    "arr": ("arr", "a", "values", "xs", "nums", "items", "vec", "elems", "seq", "list"),
    "tmp": ("tmp", "t", "aux", "spare", "extra", "probe", "w", "hold", "scratch2", "mark"),
}
_VERBS = (
    "process",
    "handle",
    "parse",
    "load",
    "copy",
    "build",
    "update",
    "read",
    "scan",
    "fill",
    "prepare",
    "decode",
    "render",
    "store",
    "compute",
    "check",
    "apply",
    "emit",
    "merge",
    "fetch",
)
_NOUNS = (
    "record",
    "packet",
    "buffer",
    "header",
    "entry",
    "message",
    "config",
    "frame",
    "token",
    "block",
    "request",
    "string",
    "item",
    "table",
    "state",
    "line",
)
_WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "tau", "zeta", "theta")


class CRandom:
    """Fresh, non-colliding identifiers and random surface choices for one function."""

    def __init__(self, rng: random.Random, reserved: Sequence[str] = ()) -> None:
        self.rng = rng
        self.used: set[str] = set(C_KEYWORDS) | set(HELPERS) | set(reserved)

    def pick(self, seq: Sequence):
        return seq[self.rng.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def name(self, role: str) -> str:
        """A new identifier in the style of ``role`` (see :data:`POOLS`), unique in this function."""
        pool = POOLS[role]
        for _ in range(20):
            base = self.pick(pool)
            cand = base if self.chance(0.6) else f"{base}{self.pick(('_1', '2', '_tmp', '_v', 'X', '_buf'))}"
            if cand not in self.used:
                self.used.add(cand)
                return cand
        cand = f"{self.pick(pool)}_{len(self.used)}"
        self.used.add(cand)
        return cand

    def names(self, **roles: str) -> dict[str, str]:
        """``names(buf="buf", i="idx")`` → ``{"buf": "chunk", "i": "k"}``."""
        return {key: self.name(role) for key, role in roles.items()}

    def func_name(self) -> str:
        styles = (lambda v, n: f"{v}_{n}", lambda v, n: f"{v}{n.capitalize()}", lambda v, n: f"{n}_{v}")
        for _ in range(20):
            cand = self.pick(styles)(self.pick(_VERBS), self.pick(_NOUNS))
            if self.chance(0.3):
                cand += self.pick(("_ex", "_impl", "2", "_fast", "_safe", "_v2", "_internal"))
            if cand not in self.used:
                self.used.add(cand)
                return cand
        return self.name("tmp") + "_fn"

    def word(self) -> str:
        return self.pick(_WORDS)


def indent(lines: Sequence[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + line if line else line for line in lines]


def wrap_flow(cr: CRandom, body: list[str]) -> list[str]:
    """Juliet-style control-flow variant around ``body`` (semantics unchanged: it runs once)."""
    kind = cr.rng.randrange(6)
    if kind == 0:
        return body
    if kind == 1:
        cond = cr.pick(("GLOBAL_CONST_TRUE", "global_returns_true()", "global_five == 5", "1"))
        return [f"if ({cond}) {{", *indent(body), "}"]
    if kind == 2:
        return ["while (1) {", *indent(body), "    break;", "}"]
    if kind == 3:
        k = cr.name("idx")
        return [f"for (int {k} = 0; {k} < 1; {k}++) {{", *indent(body), "}"]
    if kind == 4:
        case = cr.pick((6, 7, 3))
        return [
            f"switch ({case}) {{",
            f"case {case}: {{",
            *indent(body),
            "    break;",
            "}",
            "default:",
            f'    print_line("{cr.word()}");',
            "    break;",
            "}",
        ]
    return ["do {", *indent(body), "} while (0);"]


def _noise_alloc(cr: CRandom) -> list[str]:
    t, n = cr.name("tmp"), cr.pick((8, 16, 24, 32))
    return [
        f"char *{t} = (char *)calloc({n}, 1);",
        f"if ({t} != NULL) {{",
        f"    {t}[0] = '{cr.pick('xyz')}';",
        f"    free({t});",
        "}",
    ]


def _noise_null_ptr(cr: CRandom) -> list[str]:
    t = cr.name("ptr")
    return [
        f"int *{t} = NULL;",
        f"if ({t} == NULL) {{",
        f'    log_event("{cr.word()}", {cr.rng.randrange(1, 99)});',
        "}",
    ]


def _noise_loop(cr: CRandom) -> list[str]:
    k, a, hi = cr.name("idx"), cr.name("acc"), cr.rng.randrange(2, 9)
    return [f"int {a} = 0;", f"for (int {k} = 0; {k} < {hi}; {k}++) {{", f"    {a} += {k};", "}", f"print_int({a});"]


def _noise_format(cr: CRandom) -> list[str]:
    t = cr.name("tmp")
    return [
        f"int {t} = rand_value() % {cr.rng.randrange(2, 64)};",
        cr.pick((f'printf("%d\\n", {t});', f'fprintf(stderr, "{cr.word()} %d\\n", {t});', f"print_int({t});")),
    ]


def _noise_limits(cr: CRandom) -> list[str]:
    t = cr.name("num")
    return [
        f"int {t} = rand_value();",
        f"if ({t} < INT_MAX && {t} > 0) {{",
        f"    {t} = {t} - 1;",
        "}",
        f"print_int({t});",
    ]


def _noise_alnum(cr: CRandom) -> list[str]:
    s, c, k = cr.name("str"), cr.name("acc"), cr.name("idx")
    return [
        f'const char *{s} = "{cr.word()}";',
        f"int {c} = 0;",
        f"for (int {k} = 0; {s}[{k}] != '\\0'; {k}++) {{",
        f"    {c} += isalnum((unsigned char){s}[{k}]) != 0;",
        "}",
        f"print_int({c});",
    ]


def _noise_copy(cr: CRandom) -> list[str]:
    b, n = cr.name("buf"), cr.pick((32, 64))
    copy = cr.pick(
        (
            f'strcpy({b}, "{cr.word()}");',
            f'strncpy({b}, "{cr.word()}", sizeof({b}) - 1);',
            f'snprintf({b}, sizeof({b}), "%s", "{cr.word()}");',
        )
    )
    return [f"char {b}[{n}] = {{0}};", copy, f"print_line({b});"]


def _noise_checksum(cr: CRandom) -> list[str]:
    t = cr.name("tmp")
    return [f'int {t} = checksum("{cr.word()}", {cr.rng.randrange(1, 6)});', f'log_event("sum", {t});']


NOISE: tuple[Callable[[CRandom], list[str]], ...] = (
    _noise_alloc,
    _noise_null_ptr,
    _noise_loop,
    _noise_format,
    _noise_limits,
    _noise_alnum,
    _noise_copy,
    _noise_checksum,
)


def sprinkle_noise(cr: CRandom, statements: list[list[str]], max_items: int = 3) -> list[str]:
    """Insert 0..``max_items`` self-contained noise blocks between top-level statements."""
    blocks = list(statements)
    for _ in range(cr.rng.randrange(max_items + 1)):
        blocks.insert(cr.rng.randrange(len(blocks) + 1), cr.pick(NOISE)(cr))
    return [line for block in blocks for line in block]
