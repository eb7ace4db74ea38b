"""AVATAR (Shi, Yang, Yang, Xu, Zhou, Lo, "Greening Large Language Models of Code",
ICSE-SEIS 2024).

1. **Search.** AVATAR's search (:mod:`..search.nsga`): z3 pruning of the space
   (tokenizer type BPE/WordPiece/Unigram, vocabulary, layers, hidden size, heads,
   intermediate size, activation, dropout, maximum sequence length, position-embedding
   type), ``probes`` briefly distilled configurations, a ``BayesianRidge`` accuracy
   surrogate and NSGA-II over ``|size − target|``, ``−predicted accuracy`` and GFLOPs.
2. **Choice and distillation.** The Pareto configuration nearest the size target is
   distilled with Compressor's loss (soft-label KD at T = 1 on cached teacher logits).
3. **Energy.** With ``codecarbon`` installed, inference energy per 1,000 samples of
   teacher and student is logged (:mod:`..energy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..context import DistillContext, StudentOutcome
from ..search.probes import ProbeOptions
from ..student import train_student

NAME = "avatar"


@dataclass(frozen=True)
class Options(ProbeOptions):
    """The search budget (:class:`~..search.probes.ProbeOptions`), the KD
    ``temperature`` (Compressor's 1.0) and the validation rows timed for energy."""

    temperature: float = 1.0
    energy_samples: int = 200


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """AVATAR student: search, then distil the chosen configuration."""
    from ..energy import log_inference_energy
    from ..modules import soft_label_loss
    from ..search.build import gflops, materialise
    from ..search.nsga import avatar_search
    from ..search.space import size_mb

    tokenizers: dict = {}
    choice, record = avatar_search(ctx, options, tokenizers)
    model, tokenizer, config = materialise(ctx.corpus(), choice, ctx.labels, ctx.pair_mode, tokenizers)
    fit = train_student(model, tokenizer, [ctx.unlabeled], ctx.valid, soft_label_loss(options.temperature),
                        fit_config=ctx.fit_config, lr=options.lr)
    n = options.energy_samples
    energy = log_inference_energy(model, tokenizer, ctx.valid.texts[:n], (ctx.valid.texts_b or None) and ctx.valid.texts_b[:n],
                                  ctx.teacher_uri, ctx.code_columns)
    k, pm = len(ctx.labels), ctx.pair_mode
    out = {"method": NAME, "student": config.to_dict(), "target_size_mb": ctx.size_mb,
           "size_mb": size_mb(config, k, pm), "gflops": gflops(config, k, pm), "temperature": options.temperature,
           "search": record, "energy": energy}
    params = {f"arch.{k2}": v for k2, v in config.to_dict().items()}
    return StudentOutcome(model, tokenizer, out, fit, params)
