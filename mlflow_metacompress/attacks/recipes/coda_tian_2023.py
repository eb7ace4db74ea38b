"""CODA: code-difference-guided adversarial example generation.

Tian, Chen, Jin, "Code Difference Guided Adversarial Example Generation for Deep
Code Models", ASE 2023.

For a sample with label ``y`` CODA takes as *reference inputs* the ``n_references``
evaluation samples of the target's second most likely class most similar to it
(cosine over lexical-token counts here; CODA uses model embeddings). It then reduces
the code difference to those references in CODA's order:

1. **Equivalent structure transformations** whose target form the references use
   more than the sample does — for→while and while→for, if-else branch swapping,
   compound assignment and increment expansion, and literal→constant — applied
   greedily, one batch per round, each kept only when it lowers ``p(y)``. Rewrites
   come from ``mlflow_metacompress.transforms``; CODA's if-else→if-if has no
   transformation there yet and is not used. Every name in ``transformations`` must
   be a known transformation, or the recipe raises ``KeyError`` naming the known ones.
2. **Identifier renaming** with identifiers taken from the references, ranked by
   name similarity to each original identifier (CODA ranks by embedding similarity),
   greedily, identifier by identifier.

Structure rewrites are not renamings, so CODA's results list them in
``AttackResult.transformations`` and are compared with the original only up to them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..attack import Attack, AttackData, Context, Outcome
from ..composition import Composition, RenameRules, RenamesAndStructure, Search, UntargetedFlip, renamable
from ..goal import GoalResult, PredictFn, QueryModel
from ..options import AttackOptions, option
from ..search import Candidate, greedy_by_importance
from ..substitutes import name_similarity

NAME = "coda_tian_2023"

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\+\+|--|<<=|>>=|[-+*/%&|^]=|\S")
COMPOUND = ("++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
STRUCTURE = ("for_to_while", "while_to_for", "swap_if_else", "expand_compound_assignment", "literal_to_constant")


def structure_features(tokens: list[str]) -> dict[str, float]:
    """Counts (per token where noted) of the forms the structure rewrites change."""
    n = max(len(tokens), 1)
    c = Counter(tokens)
    loops = c["for"] + c["while"]
    return {
        "for": c["for"],
        "while": c["while"],
        "else": c["else"],
        "else_rate": c["else"] / c["if"] if c["if"] else 0.0,
        "while_share": c["while"] / loops if loops else 0.0,
        "for_share": c["for"] / loops if loops else 0.0,
        "compound": sum(c[k] for k in COMPOUND) / n,
        "literal": sum(v for k, v in c.items() if k[0].isdigit()) / n,
        "constant": sum(v for k, v in c.items() if len(k) > 1 and k.isupper() and k[0].isalpha()) / n,
    }


def eligible(target: dict[str, float], refs: list[dict[str, float]]) -> list[str]:
    """Structure rewrites that move ``target`` towards the references' forms."""
    if not refs:
        return []
    mean = {k: float(np.mean([r[k] for r in refs])) for k in target}
    out = []
    if target["for"] and mean["while_share"] > target["while_share"]:
        out.append("for_to_while")
    if target["while"] and mean["for_share"] > target["for_share"]:
        out.append("while_to_for")
    if target["else"] and mean["else"] > 0:
        out.append("swap_if_else")
    if target["compound"] and mean["compound"] < target["compound"]:
        out.append("expand_compound_assignment")
    if target["literal"] and mean["constant"] > target["constant"]:
        out.append("literal_to_constant")
    return out


def check_transformations(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` as a tuple; ``KeyError`` naming the known transformations if one is unknown."""
    from ...transforms import LANGUAGES, list_transforms

    known = sorted({t for language in LANGUAGES for t in list_transforms(language)})
    unknown = [n for n in names if n not in known]
    if unknown:
        raise KeyError(f"{NAME}: unknown transformations {unknown}; known: {known}")
    return tuple(names)


def _cosine(a: Counter[str], na: float, b: Counter[str], nb: float) -> float:
    if not na or not nb:
        return 0.0
    small, large = (a, b) if len(a) < len(b) else (b, a)
    return sum(v * large.get(k, 0) for k, v in small.items()) / (na * nb)


@dataclass(frozen=True)
class CODAOptions(AttackOptions):
    """CODA's options: reference inputs, substitutes per identifier, the structure stage
    and the structure rewrites it may use (known transformation names)."""

    n_references: int = option(5, int, minimum=1, doc="reference inputs of the second most likely class")
    top_k: int = option(30, int, minimum=1, doc="substitutes per identifier")
    structure: bool = option(True, bool, doc="apply structure rewrites before renaming")
    transformations: tuple[str, ...] = option(STRUCTURE, check=lambda v: _transformations(v), doc="structure rewrites")


def _transformations(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"option transformations must be a sequence of transformation names, got {value!r}")
    return check_transformations(value)


class CODATian2023(Attack):
    name = NAME
    renaming_only = False
    Options = CODAOptions
    options: CODAOptions

    def __init__(self, model: QueryModel | PredictFn, options: CODAOptions | None = None, **values: Any) -> None:
        super().__init__(model, options, **values)
        self.n_references = self.options.n_references
        self.top_k = self.options.top_k
        self.structure = self.options.structure
        self.transformations = self.options.transformations

    def compose(self) -> Composition:
        return Composition(
            goal=UntargetedFlip(),
            constraints=RenameRules(self.options.max_changed),
            transformation=RenamesAndStructure(
                "identifiers of the reference inputs, ranked by name similarity",
                structure=self.options.transformations if self.options.structure else (),
            ),
            search=Search("greedy_structure_then_greedy_renames", self._search),
        )

    def prepare(self, data: AttackData, progress: bool = False) -> None:
        super().prepare(data, progress)
        self._tokens = [_TOKEN.findall(c) for c in data.codes]
        self._bags = [Counter(t) for t in self._tokens]
        self._norms = [math.sqrt(sum(v * v for v in b.values())) for b in self._bags]
        self._labels = np.asarray(data.labels).astype(int)
        self._idents: dict[int, list[str]] = {}

    def references(self, position: int, start: GoalResult) -> list[int]:
        """Positions of the most similar samples of the second most likely class."""
        order = np.argsort(-start.probs, kind="stable")
        second = int(order[1]) if len(order) > 1 else int(order[0])
        pool = [i for i in np.flatnonzero(self._labels == second) if i != position]
        if not pool:
            pool = [i for i in np.flatnonzero(self._labels != start.label) if i != position]
        me, nme = self._bags[position], self._norms[position]
        pool.sort(key=lambda i: (-_cosine(me, nme, self._bags[i], self._norms[i]), i))
        return [int(i) for i in pool[: self.n_references]]

    def _ref_identifiers(self, i: int) -> list[str]:
        if i not in self._idents:
            assert self.data is not None
            self._idents[i] = renamable(self.data.codes[i], self.data.language) or []
        return self._idents[i]

    def _restructure(self, ctx: Context, refs: list[int]) -> tuple[GoalResult, list[str]]:
        from ...transforms import list_transforms, transform

        available = set(list_transforms(ctx.language))
        current, applied = ctx.start, []
        ref_feats = [structure_features(self._tokens[i]) for i in refs]
        while not ctx.goal.exhausted and not current.succeeded:
            feats = structure_features(_TOKEN.findall(current.code))
            todo = [
                t
                for t in eligible(feats, ref_feats)
                if t in self.transformations and t not in applied and t in available
            ]
            names, codes = [], []
            for t in todo:
                try:
                    out = transform(current.code, t, ctx.language, seed=ctx.position)
                except ValueError:
                    continue
                if out.code and out.code != current.code and renamable(out.code, ctx.language):
                    names.append(t)
                    codes.append(out.code)
            results = ctx.goal.get_results(codes)
            if not results:
                break
            k = max(range(len(results)), key=lambda j: (results[j].succeeded, results[j].score))
            if results[k].score <= current.score and not results[k].succeeded:
                break
            current = results[k]
            applied.append(names[k])
        return current, applied

    def _search(self, ctx: Context) -> Outcome:
        refs = self.references(ctx.position, ctx.start)
        current, applied = self._restructure(ctx, refs) if self.structure else (ctx.start, [])
        if current.succeeded:
            return Outcome(Candidate({}, current), applied)
        present = set(renamable(current.code, ctx.language) or [])
        names = [n for n in ctx.names if n in present]
        space = ctx.space(code=current.code, names=names, start=current)
        pool = list(dict.fromkeys(n for i in refs for n in self._ref_identifiers(i)))
        c = space.constraints
        subs = {}
        for n in names:
            ranked = sorted(pool, key=lambda m: (-name_similarity(n, m), m))
            subs[n] = c.substitutes(n, ranked)[: self.top_k]
        return Outcome(greedy_by_importance(space, names, subs), applied)


def build(model: QueryModel | PredictFn, **options: Any) -> CODATian2023:
    """CODA with :class:`CODAOptions` (``budget``, ``seed``, ``n_references``, ``structure``, ...)."""
    return CODATian2023(model, CODAOptions.parse(NAME, **options))
