"""``repair``: distil, then remove the teacher–student deviations a search finds, judged on
rewrites it never trained on.

DFLARE (Tian et al., TOSEM 2023) retrained compressed models on the deviating inputs its
search found and removed up to 48% of them; TinyBERT (Jiao et al., 2020) distils hidden
states and attention layer by layer; MiniLM (Wang et al., 2020) distils self-attention
relations. None trains on teacher–student agreement over code rewritten to mean the same.

1. **Distil.** The ``fidelity`` method's first stage (architecture, variants, loss,
   checkpoint selection; :mod:`.fidelity`) with the variants of ``train_transforms`` only,
   plus, with ``layer_align``, TinyBERT's hidden-state and/or MiniLM's attention and value losses
   (:mod:`..align`, :class:`..repair.RepairModule`).
2. **Rounds.** ``rounds`` times: the deviation search (``search``, ``queries`` paired
   queries per row, restricted to ``train_transforms``) on ``search_rows`` training rows;
   the verified deviating variants, labelled by the teacher (cached with its other soft
   labels, :mod:`..fidelity_cache`), and ``replay`` training rows per variant train the
   student for ``round_steps`` steps; the student is re-queried on the round's deviations
   (:func:`..repair.repair_rounds`). Each round logs ``repair_*`` metrics at step = round.
3. **A fair test.** ``held_out_transforms`` (default: every second operator of the
   language's deviation space, :func:`~mlflow_metacompress.attacks.deviation.space.default_operators`;
   the rest train) are never used; the run is tagged ``metacompress.trained_transforms``
   and ``metacompress.held_out_transforms`` so evaluation can judge on the held-out ones.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ...deviation_defaults import DEFAULT_DEPTH
from ..context import DistillContext, StudentOutcome
from ..datasets import CodeExamples
from ..search.build import describe_student
from .fidelity import Options as FidelityOptions

if TYPE_CHECKING:
    from ..repair import TrainFn

NAME = "repair"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options(FidelityOptions):
    """The fidelity options (``transforms`` excepted: ``train_transforms`` names the
    training rewrites) and the rounds: ``rounds``, ``queries`` per searched row,
    ``search_rows`` per round, ``round_steps``, ``replay`` training rows per deviating
    variant, ``search`` (``dflare`` or ``random``) with DFLARE's operators per mutant ``depth``
    (:func:`~mlflow_metacompress.attacks.deviation.search.dflare`), ``train_transforms`` /
    ``held_out_transforms`` (disjoint), ``seed`` of the search (default: the run's), and
    ``layer_align`` (TinyBERT's ``hidden`` states, MiniLM's ``attention`` distributions or
    ``value`` relations, ``minilm`` = both of MiniLM's, ``both`` = hidden + attention, ``all``,
    or None) with ``layer_weight`` and its position ``buckets``."""

    rounds: int = 2
    queries: int = 30
    search_rows: int = 64
    round_steps: int = 50
    replay: int = 1
    search: Literal["dflare", "random"] = "dflare"
    depth: int = DEFAULT_DEPTH
    train_transforms: tuple[str, ...] | None = None
    held_out_transforms: tuple[str, ...] | None = None
    seed: int | None = None
    layer_align: Literal["hidden", "attention", "value", "minilm", "both", "all"] | None = None
    layer_weight: float = 1.0
    buckets: int = 16

    def __post_init__(self) -> None:
        least = {"rounds": 0, "queries": 1, "search_rows": 1, "round_steps": 1, "replay": 0, "buckets": 1, "depth": 1}
        for key, low in least.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"repair option {key} must be an integer >= {low}, got {value!r}")
        if not self.layer_weight >= 0:
            raise ValueError(f"repair option layer_weight must be >= 0, got {self.layer_weight!r}")
        if self.layer_align not in (None, "hidden", "attention", "value", "minilm", "both", "all"):
            raise ValueError(
                "repair option layer_align must be hidden, attention, value, minilm (attention + value), both "
                f"(hidden + attention), all or None, got {self.layer_align!r}"
            )
        if self.search not in ("dflare", "random"):
            raise ValueError(f"repair option search must be 'dflare' or 'random', got {self.search!r}")
        if self.transforms is not None:
            raise ValueError("repair option transforms is not used: name the training rewrites with train_transforms")


def split_transforms(options: Options, language: str) -> tuple[list[str], list[str]]:
    """``(training rewrites, held-out rewrites)`` of ``language``'s deviation space: each
    given list checked against it, the other one its complement; defaults alternate."""
    from ...attacks.deviation.space import default_operators

    known = default_operators(language)
    for key in ("train_transforms", "held_out_transforms"):
        unknown = sorted(set(getattr(options, key) or ()) - set(known))
        if unknown:
            raise ValueError(f"repair option {key}: unknown rewrite(s) {unknown} for {language}; known: {known}")
    train, held = options.train_transforms, options.held_out_transforms
    if train is None and held is None:
        held = tuple(known[1::2])
    if train is not None and held is not None:
        shared = sorted(set(train) & set(held))
        if shared:
            raise ValueError(
                f"repair options train_transforms and held_out_transforms share {shared}: "
                "a held-out rewrite is never trained on"
            )
    train_list = list(train) if train is not None else [o for o in known if o not in set(held or ())]
    held_list = list(held) if held is not None else [o for o in known if o not in set(train_list)]
    if not train_list:
        raise ValueError(f"repair option train_transforms leaves no rewrite to train on ({language}: {known})")
    return train_list, held_list


def round_trainer(
    ctx: DistillContext,
    options: Options,
    model: Any,
    tokenizer: Any,
    base: tuple[np.ndarray, np.ndarray],
    variants: tuple[CodeExamples, np.ndarray, np.ndarray, list[np.ndarray]],
    teacher: tuple[Any, Any] | None = None,
) -> TrainFn:
    """``train(round, deviations, logits, states)``: ``round_steps`` steps of
    :class:`..repair.RepairModule` on the deviating variants and ``replay`` × as many
    unlabeled rows (``base``: their cached teacher logits and states; ``variants``: the
    first stage's variant table), keeping the last weights."""
    from ..repair import RepairModule
    from ..training import fit

    var, var_logits, var_states, variant_of = variants
    un = ctx.unlabeled

    def train(r: int, found: CodeExamples, logits: np.ndarray, states: np.ndarray) -> None:
        rng = np.random.default_rng([ctx.seed, r])
        pick = rng.permutation(len(un))[: options.replay * len(found)]
        texts = found.texts + [un.texts[i] for i in pick]
        texts_b = None if un.texts_b is None else (found.texts_b or []) + [un.texts_b[i] for i in pick]
        t, z = np.concatenate([logits, base[0][pick]]), np.concatenate([states, base[1][pick]])
        var_of = [np.zeros(0, np.int64)] * len(found) + [variant_of[i] for i in pick]
        module = RepairModule(
            model, tokenizer, t, z, var.texts, var.texts_b, var_logits, var_states, var_of, options,
            options.variants_per_step, lr=options.lr, seed=ctx.seed + r, layer_align=options.layer_align,
            layer_weight=options.layer_weight, buckets=options.buckets, teacher=teacher, texts=(texts, texts_b),
        )  # fmt: skip
        steps = replace(ctx.fit_config, max_steps=options.round_steps, epochs=options.round_steps)
        fit(
            module,
            tokenizer,
            CodeExamples(texts, texts_b, None, t),
            None,
            replace(steps, monitor="last", patience=None),
            mlflow_logger=False,
        )

    return train


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Repair student: the fidelity stage on the training rewrites, then the repair rounds."""
    from ...transforms import list_transforms
    from ..align import eager_attention
    from ..augment import language_of, variant_table
    from ..fidelity_cache import load_teacher_classifier, teacher_outputs
    from ..losses import FIDELITY_WEIGHTS
    from ..repair import RepairModule, predictor, repair_rounds
    from ..search.build import materialise
    from ..training import fit
    from .fidelity import SELECT_MONITOR, choose_architecture, tag_trained, validation_set

    language = language_of(ctx.task, options.language)
    trained, held_out = split_transforms(options, language)
    tag_trained(list(trained), list(held_out))  # before training: a failed run still says what it trained on
    tokenizers: dict = {}
    if options.student_config is not None:
        choice, record = options.student_config, {"given": True}
    else:
        choice, record = choose_architecture(ctx, options, tokenizers)
    names = [n for n in trained if n in list_transforms(language)]  # rename_identifier is the search's own
    variants, variant_of = variant_table(ctx.unlabeled, language, names, ctx.seed, options.variant_rows)
    progress = ctx.fit_config.progress
    t_o, z_o = teacher_outputs(ctx.teacher_uri, ctx.unlabeled, ctx.cache_dir, progress=progress)
    t_v, z_v = (
        teacher_outputs(ctx.teacher_uri, variants, ctx.cache_dir, progress=progress)
        if len(variants)
        else (np.zeros((0, t_o.shape[1]), np.float32), np.zeros((0, z_o.shape[1]), np.float32))
    )
    model, tokenizer, config = materialise(ctx.corpus(), choice, ctx.labels, ctx.pair_mode, tokenizers, ctx.seed)
    teacher = (
        load_teacher_classifier(ctx.teacher_uri, needs="the repair method queries it") if ctx.teacher_uri else None
    )
    if teacher is None and (options.rounds or options.layer_align):
        raise ValueError("the repair method needs the teacher's URI (ctx.teacher_uri is empty)")
    aligned = teacher if options.layer_align else None
    un = ctx.unlabeled
    module = RepairModule(
        model, tokenizer, t_o, z_o, variants.texts, variants.texts_b, t_v, z_v, variant_of, options,
        options.variants_per_step, lr=options.lr, seed=ctx.seed, layer_align=options.layer_align,
        layer_weight=options.layer_weight, buckets=options.buckets, teacher=aligned, texts=(un.texts, un.texts_b),
    )  # fmt: skip
    valid = validation_set(ctx, language, names, options.select)
    attention = options.layer_align in ("attention", "minilm", "both", "all") and teacher is not None
    with eager_attention(model, teacher[0]) if attention and teacher is not None else nullcontext():
        result = fit(
            module,
            tokenizer,
            CodeExamples(un.texts, un.texts_b, None, t_o),
            valid,
            replace(ctx.fit_config, monitor=SELECT_MONITOR[options.select]),
        )
        figures = []
        if options.rounds and teacher is not None:
            train = round_trainer(ctx, options, model, tokenizer, (t_o, z_o), (variants, t_v, z_v, variant_of), aligned)
            figures = repair_rounds(
                un, ctx.code_columns, language,
                predictor(*teacher, ctx.code_columns), predictor(model, tokenizer, ctx.code_columns),
                lambda ex: teacher_outputs(ctx.teacher_uri, ex, ctx.cache_dir, progress=progress), train,
                rounds=options.rounds, queries=options.queries, search_rows=options.search_rows, operators=trained,
                search=options.search, seed=ctx.seed if options.seed is None else options.seed, progress=progress,
                depth=options.depth,
            )  # fmt: skip
    outcome = describe_student(
        ctx, NAME, (model, tokenizer, config), result, record,
        weights={w: getattr(options, w) for w in FIDELITY_WEIGHTS}, trained_transforms=trained,
        held_out_transforms=held_out, variants=len(variants), language=language, checkpoint_selection=options.select,
        layer_align=options.layer_align, rounds=[f.metrics() for f in figures],
    )  # fmt: skip
    outcome.params.update({"trained_transforms": ",".join(trained), "held_out_transforms": ",".join(held_out)})
    return outcome
