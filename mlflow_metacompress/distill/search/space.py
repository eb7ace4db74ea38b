"""AVATAR's configuration space and its z3 pruning (Shi, Yang, Yang, Xu, Zhou, Lo,
"Greening Large Language Models of Code", ICSE-SEIS 2024).

AVATAR first removes the configurations that cannot work with an SMT solver, then
searches only inside the bounds that survive. The constraints (as in the paper and
issue 6):

- ``hidden_size`` is a multiple of 16 and divisible by ``num_attention_heads``;
- ``vocab_size`` is a multiple of 1000;
- ``intermediate_size`` is a multiple of 32;
- the model size (parameters × 4 bytes / 10^6, Compressor's definition) is within
  the target: ``lower × target ≤ size ≤ upper × target``;
- rotary position embeddings (an ESM-style encoder, the only Hugging Face encoder
  that offers them besides absolute ones) come with GELU only, because ESM's
  feed-forward hard-codes GELU;
- with ``sound=True`` (the ``latency`` objective, :mod:`.objective`), shapes are also
  structurally sound: head dimension ≥ 16 and FFN ≤ 4 × hidden.

A configuration is an :class:`~..arch.ArchSpec`. The parameter count is a closed form
(:func:`..arch.param_count`) written with plain arithmetic, so the same function
evaluates Python ints and builds z3 terms. The numeric genes are integer intervals;
categorical genes (tokenizer, activation, dropout, maximum sequence length,
position-embedding type) are index variables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from ..arch import ArchSpec, param_count

logger = logging.getLogger(__name__)

NUMERIC = ("vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
CATEGORICAL = ("tokenizer", "hidden_act", "dropout", "max_length", "position_embedding_type")
MIN_HEAD_DIM = 16
MAX_FFN_RATIO = 4
STEPS = {
    "vocab_size": 1000,
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 1,
}


@dataclass(frozen=True)
class AvatarSpace:
    """Intervals of the numeric genes and choices of the categorical ones (AVATAR's
    space: vocabulary 1k–46k, 1–12 layers, hidden 16–768, 1–12 heads, intermediate
    32–3072; tokenizers BPE/WordPiece/Unigram; activations; dropout; lengths)."""

    vocab_size: tuple[int, int] = (1000, 46000)
    num_hidden_layers: tuple[int, int] = (1, 12)
    hidden_size: tuple[int, int] = (16, 768)
    num_attention_heads: tuple[int, int] = (1, 12)
    intermediate_size: tuple[int, int] = (32, 3072)
    tokenizer: tuple[str, ...] = ("bpe", "wordpiece", "unigram")
    hidden_act: tuple[str, ...] = ("gelu", "relu", "silu", "gelu_new")
    dropout: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3)
    max_length: tuple[int, ...] = (128, 256, 320, 400, 512)
    position_embedding_type: tuple[str, ...] = ("absolute", "rotary")

    def __post_init__(self) -> None:
        for name in NUMERIC:
            lo, hi = getattr(self, name)
            if not 1 <= lo <= hi:
                raise ValueError(f"AvatarSpace.{name} must be an interval 1 ≤ lo ≤ hi, got {(lo, hi)}")
        for name in CATEGORICAL:
            if not getattr(self, name):
                raise ValueError(f"AvatarSpace.{name} needs at least one choice")

    def grid(self, name: str) -> list[int]:
        """The values of numeric gene ``name`` that meet its divisibility constraint."""
        lo, hi = getattr(self, name)
        step = STEPS[name]
        return list(range(-(-lo // step) * step, hi + 1, step))


def size_mb(c: ArchSpec, num_labels: int = 2, pair_mode: str | None = None) -> float:
    return param_count(c, num_labels, pair_mode) * 4 / 1e6


def structurally_sound(c: Any) -> bool:
    """Head dimension ≥ 16, hidden a multiple of the heads, FFN ≤ 4 × hidden."""
    h, a, f = c.hidden_size, c.num_attention_heads, c.intermediate_size
    return h % a == 0 and h // a >= MIN_HEAD_DIM and f <= MAX_FFN_RATIO * h


def satisfies(
    c: ArchSpec,
    target_mb: float,
    lower: float = 0.0,
    upper: float = 1.0,
    num_labels: int = 2,
    pair_mode: str | None = None,
    sound: bool = False,
) -> bool:
    """The constraints checked directly in Python (the oracle for the z3 encoding)."""
    s = size_mb(c, num_labels, pair_mode)
    return (
        c.hidden_size % 16 == 0
        and c.hidden_size % c.num_attention_heads == 0
        and c.vocab_size % 1000 == 0
        and c.intermediate_size % 32 == 0
        and lower * target_mb <= s <= upper * target_mb
        and (c.position_embedding_type != "rotary" or c.hidden_act == "gelu")
        and (not sound or structurally_sound(c))
    )


@dataclass
class PrunedSpace:
    """The feasible bounds of every numeric gene and the categorical choices left."""

    space: AvatarSpace
    bounds: dict[str, tuple[int, int]]
    choices: dict[str, tuple[Any, ...]]
    target_mb: float
    lower: float
    upper: float
    num_labels: int = 2
    pair_mode: str | None = None
    checks: int = field(default=0)
    sound: bool = False  # structurally sound shapes only (the latency objective)

    def grid(self, name: str) -> list[Any]:
        if name in self.choices:
            return list(self.choices[name])
        lo, hi = self.bounds[name]
        return [v for v in self.space.grid(name) if lo <= v <= hi]

    def search_space(self) -> AvatarSpace:
        """An :class:`AvatarSpace` restricted to the feasible bounds."""
        narrowed: dict[str, Any] = {**self.bounds, **self.choices}  # field name → its restricted range or grid
        return replace(self.space, **narrowed)

    def feasible(self, c: ArchSpec) -> bool:
        return satisfies(c, self.target_mb, self.lower, self.upper, self.num_labels, self.pair_mode, self.sound)


class _Encoding:
    """z3 variables and constraints of an :class:`AvatarSpace` at a size target."""

    def __init__(
        self,
        space: AvatarSpace,
        target_mb: float,
        lower: float,
        upper: float,
        num_labels: int,
        pair_mode: str | None,
        sound: bool = False,
    ) -> None:
        from ..._optional import require

        z3 = require("z3", "the constrained architecture search (AVATAR)")

        self.space = space
        self.v = {n: z3.Int(n) for n in NUMERIC}
        self.idx = {n: z3.Int(f"{n}_idx") for n in CATEGORICAL}
        s = z3.Solver()
        for n in NUMERIC:
            lo, hi = getattr(space, n)
            s.add(self.v[n] >= lo, self.v[n] <= hi)
        for n in CATEGORICAL:
            s.add(self.idx[n] >= 0, self.idx[n] < len(getattr(space, n)))
        v = self.v
        s.add(
            v["hidden_size"] % 16 == 0,
            v["hidden_size"] % v["num_attention_heads"] == 0,
            v["vocab_size"] % 1000 == 0,
            v["intermediate_size"] % 32 == 0,
        )
        if sound:
            s.add(
                v["hidden_size"] >= MIN_HEAD_DIM * v["num_attention_heads"],
                v["intermediate_size"] <= MAX_FFN_RATIO * v["hidden_size"],
            )
        self.max_len = z3.Int("max_length")
        s.add(
            z3.Or([z3.And(self.idx["max_length"] == k, self.max_len == val) for k, val in enumerate(space.max_length)])
        )
        pos, act = space.position_embedding_type, space.hidden_act
        rotary = z3.Or(
            [self.idx["position_embedding_type"] == k for k, p in enumerate(pos) if p == "rotary"] or [False]
        )
        gelu = z3.Or([self.idx["hidden_act"] == k for k, a in enumerate(act) if a == "gelu"] or [False])
        s.add(z3.Implies(rotary, gelu))

        class _Terms:
            vocab_size, num_hidden_layers, hidden_size = v["vocab_size"], v["num_hidden_layers"], v["hidden_size"]
            num_attention_heads, intermediate_size, max_length = (
                v["num_attention_heads"],
                v["intermediate_size"],
                self.max_len,
            )

        # size in bytes (×4) against the target in bytes, all in integers
        params = param_count(_Terms, num_labels, pair_mode, rotary=rotary)
        s.add(4 * params <= int(upper * target_mb * 1e6))
        if lower > 0:
            s.add(4 * params >= int(-(-lower * target_mb * 1e6 // 1)))
        self.solver = s
        self.checks = 0
        self.num_labels, self.pair_mode = num_labels, pair_mode

    def sat(self, *extra: Any) -> bool:
        import z3

        self.checks += 1
        return self.solver.check(*extra) == z3.sat

    def decode(self, model: Any) -> ArchSpec:
        vals: dict[str, Any] = {n: model.eval(self.v[n]).as_long() for n in NUMERIC}
        for n in CATEGORICAL:
            vals[n] = getattr(self.space, n)[model.eval(self.idx[n]).as_long()]
        return ArchSpec(**vals, num_labels=self.num_labels, pair_mode=self.pair_mode)


def prune(
    space: AvatarSpace,
    target_mb: float,
    *,
    lower: float = 0.0,
    upper: float = 1.0,
    num_labels: int = 2,
    pair_mode: str | None = None,
    sound: bool = False,
) -> PrunedSpace:
    """Feasible bounds of every numeric gene (binary search on z3 satisfiability of
    ``gene ≥ x`` and ``gene ≤ x``) and the categorical choices that remain feasible.

    Raises ``ValueError`` when no configuration of ``space`` meets the constraints.
    """
    enc = _Encoding(space, target_mb, lower, upper, num_labels, pair_mode, sound)
    if not enc.sat():
        raise ValueError(f"no configuration of the space fits {target_mb} MB (size in [{lower}, {upper}] × target)")
    bounds = {}
    for n in NUMERIC:
        grid = space.grid(n)
        var = enc.v[n]
        # smallest feasible: first x with sat(var <= x); largest: last x with sat(var >= x)
        lo_i, hi_i = 0, len(grid) - 1
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            lo_i, hi_i = (lo_i, mid) if enc.sat(var <= grid[mid]) else (mid + 1, hi_i)
        first = lo_i
        lo_i, hi_i = first, len(grid) - 1
        while lo_i < hi_i:
            mid = (lo_i + hi_i + 1) // 2
            lo_i, hi_i = (mid, hi_i) if enc.sat(var >= grid[mid]) else (lo_i, mid - 1)
        bounds[n] = (grid[first], grid[lo_i])
    choices = {
        n: tuple(val for k, val in enumerate(getattr(space, n)) if enc.sat(enc.idx[n] == k)) for n in CATEGORICAL
    }
    logger.info("z3 pruning at %.2f MB: %s, %s (%d solver checks)", target_mb, bounds, choices, enc.checks)
    return PrunedSpace(space, bounds, choices, target_mb, lower, upper, num_labels, pair_mode, enc.checks, sound)


def enumerate_feasible(
    space: AvatarSpace,
    target_mb: float,
    *,
    lower: float = 0.0,
    upper: float = 1.0,
    num_labels: int = 2,
    pair_mode: str | None = None,
    limit: int = 10_000,
    sound: bool = False,
) -> list[ArchSpec]:
    """Every feasible configuration (up to ``limit``), by blocking each z3 model found."""
    import z3

    enc = _Encoding(space, target_mb, lower, upper, num_labels, pair_mode, sound)
    found: list[ArchSpec] = []
    keys = [*enc.v.values(), *enc.idx.values()]
    while len(found) < limit and enc.sat():
        model = enc.solver.model()
        found.append(enc.decode(model))
        enc.solver.add(z3.Or([k != model.eval(k, model_completion=True) for k in keys]))
    return found
