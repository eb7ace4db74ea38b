"""Generated clone-detection pairs (a BigCloneBench-shaped offline default), in C.

A clone pair renders one :class:`~.clone_behaviours.Behaviour` twice with independent
random choices: identifiers, function name, loop kind (``for``/``while``/``do``-``while``,
forward or backward when order does not matter, index or pointer walk), equivalent
update forms, the order of independent initialisations and updates, closed forms, and
extraction of a helper function. A non-clone pair renders two different behaviours,
usually from the same signature family (a hard negative). The frame has columns
``func1``, ``func2``, ``label`` (1 = clone), ``behaviour1``, ``behaviour2`` and ``idx``;
labels are balanced exactly.

This data is *generated*; point the pipeline at BigCloneBench
(``mlflow_metacompress.data.codexglue``) for real results.
"""

from __future__ import annotations

import logging
import random
from string import Template

from .c_random import CRandom, indent
from .clone_behaviours import BEHAVIOURS, FAMILIES, ROLE_POOLS, Behaviour

logger = logging.getLogger(__name__)


def _sub(text: str, names: dict[str, str]) -> list[str]:
    return Template(text).substitute(names).split("\n")


def _loop(cr: CRandom, b: Behaviour, names: dict[str, str]) -> tuple[list[str], list[str], list[str], int]:
    """(declarations, lines before the body, lines after it, body depth); sets ``names["e"]``."""
    i = names["i"]
    inc = cr.pick((f"{i}++", f"++{i}", f"{i} += 1"))
    if b.loop[0] == "cstr":
        s = names["s"]
        if cr.chance(0.3):
            t = names["t"]
            names["e"] = f"*{t}"
            return [], [f"for (const char *{t} = {s}; *{t}; {t}++) {{"], ["}"], 1
        names["e"] = cr.pick((f"{s}[{i}]", f"*({s} + {i})"))
        cond = cr.pick((f"{s}[{i}] != '\\0'", f"{s}[{i}]"))
        if cr.chance(0.5):
            return [f"int {i};"], [f"for ({i} = 0; {cond}; {inc}) {{"], ["}"], 1
        return [f"int {i} = 0;"], [f"while ({cond}) {{"], [f"    {inc};", "}"], 1
    start, end = (Template(x).substitute(names) for x in b.loop[1:])
    if "arr" in names:
        names["e"] = cr.pick((f"{names['arr']}[{i}]", f"*({names['arr']} + {i})"))
    last = end[:-4] if end.endswith(" + 1") else f"{end} - 1"
    kind = cr.rng.randrange(5 if b.order_free else 4)
    if kind == 0:
        cond = cr.pick((f"{i} < {end}", f"{i} <= {last}")) if end.endswith(" + 1") else f"{i} < {end}"
        return [f"int {i};"], [f"for ({i} = {start}; {cond}; {inc}) {{"], ["}"], 1
    if kind == 1:
        return [], [f"for (int {i} = {start}; {i} < {end}; {inc}) {{"], ["}"], 1
    if kind == 2:
        return [f"int {i} = {start};"], [f"while ({i} < {end}) {{"], [f"    {inc};", "}"], 1
    if kind == 3:
        return (
            [f"int {i} = {start};"],
            [f"if ({i} < {end}) {{", "    do {"],
            [f"        {inc};", f"    }} while ({i} < {end});", "}"],
            2,
        )
    return [], [f"for (int {i} = {last}; {i} >= {start}; {i}--) {{"], ["}"], 1


def render_behaviour(rng: random.Random, behaviour: str | Behaviour) -> str:
    """One C implementation of ``behaviour`` (possibly preceded by an extracted helper)."""
    b = BEHAVIOURS[behaviour] if isinstance(behaviour, str) else behaviour
    cr = CRandom(rng)
    params = FAMILIES[b.family]
    names = {role: cr.name(ROLE_POOLS[role]) for _, role in params}
    names.update(
        i=cr.name("idx"), t=cr.name("tmp"), x=cr.name("num"), y=cr.name("num"), acc=cr.name("acc"), h=cr.func_name()
    )
    for key, _ in b.accs:
        names.setdefault(key, cr.name("acc"))
    fname = cr.func_name()
    helper: list[str] = []
    forms = ["loop"] if b.updates else []
    forms += ["closed"] * bool(b.closed_forms) + ["custom"] * len(b.custom)
    choice = cr.pick(forms)
    body: list[str] = _sub(b.guard, names) if b.guard and choice != "custom" else []
    if choice == "closed":
        body += _sub(cr.pick(b.closed_forms), names)
    elif choice == "custom":
        body += _sub(cr.pick(b.custom), names)
    else:
        updates = [cr.pick(forms) for forms in b.updates]
        if b.helper is not None and cr.chance(0.5):
            updates = [cr.pick(b.helper.updates)]
            helper = [f"static int {names['h']}(int {names['x']})", "{", *indent(_sub(b.helper.body, names)), "}", ""]
        cr.rng.shuffle(updates)  # independent accumulator updates
        decls, before, after, depth = _loop(cr, b, names)
        inner = [line for u in updates for line in _sub(u, names)]
        loop = [*before, *indent(inner, depth), *after]
        inits = [[f"int {names[key]} = {Template(init).substitute(names)};"] for key, init in b.accs] + [decls]
        cr.rng.shuffle(inits)  # independent initialisations
        body += [line for block in inits for line in block] + loop + _sub(cr.pick(b.post), names)
    signature = ", ".join(f"{ctype}{'' if ctype.endswith('*') else ' '}{names[role]}" for ctype, role in params)
    return "\n".join([*helper, f"int {fname}({signature})", "{", *indent(body), "}"]) + "\n"


def _pick_other(rng: random.Random, name: str) -> str:
    family = BEHAVIOURS[name].family
    same = [b for b, spec in BEHAVIOURS.items() if spec.family == family and b != name]
    pool = same if same and rng.random() < 0.7 else [b for b in BEHAVIOURS if b != name]
    return pool[rng.randrange(len(pool))]


def generate_clones(n: int = 1000, seed: int = 0):
    """``n`` generated C function pairs (half clones) as a DataFrame.

    Columns ``func1``, ``func2``, ``label`` (1 = same behaviour), ``behaviour1``,
    ``behaviour2``, ``idx``. Deterministic for ``seed``.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    if n < 2:
        raise ValueError(f"n must be at least 2 (one clone and one non-clone pair), got {n}")
    rng = random.Random(f"clone:{seed}")
    names = list(BEHAVIOURS)
    rows = []
    # disable=None: tqdm draws the bar only on a terminal, never into a log file
    for i in tqdm(range(n), desc="generating clone pairs", disable=True if n < 5000 else None, leave=False):
        first = names[(i // 2) % len(names)]
        label = (i + i // 2) % 2
        second = first if label else _pick_other(rng, first)
        code1 = render_behaviour(rng, first)
        code2 = render_behaviour(rng, second)
        for _ in range(8):  # a clone pair must differ in form
            if code2 != code1:
                break
            code2 = render_behaviour(rng, second)
        rows.append({"func1": code1, "func2": code2, "label": label, "behaviour1": first, "behaviour2": second})
    rng.shuffle(rows)
    for i, row in enumerate(rows):
        row["idx"] = i
    logger.info("generated %d C function pairs over %d behaviours (seed %d)", n, len(names), seed)
    return pd.DataFrame(rows)
