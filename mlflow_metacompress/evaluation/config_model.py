"""The :class:`EvaluatorConfig` dataclass: every key ``evaluator_config`` accepts.

Its own module, below everything that reads a config (the checks of
:mod:`.config_checks` and :mod:`.slices`, the engines, the variant producers, the
prediction and judging steps), so that none of them imports :mod:`.config`, which runs
those checks (:func:`~.config.parse_config`); the evaluation package has no import loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from ..adapters.checks import MetaCompressInputError
from ..relations import RelationConfig

Source = Literal["given", "default", "inferred", "detected"]


@dataclass(frozen=True)
class EvaluatorConfig:
    """Every key ``evaluator_config`` accepts (unknown keys are rejected by name).

    Column and attack lists are tuples (the config is immutable). ``sources`` is not a
    key: it records how :func:`parse_config` filled values the user left unset.
    """

    teacher: Any = None
    code_columns: tuple[str, ...] | None = None
    teacher_prob_columns: tuple[str, ...] | None = None
    student_prob_columns: tuple[str, ...] | None = None
    reference: Any = None  # a retrained teacher judged against the teacher on the same rows (evaluation/reference.py)
    reference_prob_columns: tuple[str, ...] | None = None  # static mode: the reference's probability columns
    kl_threshold: float = 0.1
    confidence_threshold: float = 0.8
    calibration_bins: int = 10
    eca_threshold: float = 0.05
    batch_size: int = 64
    seed: int = 0
    bootstrap_samples: int = 1000
    metric_prefix: str = ""
    cache_dir: str | None = None
    use_cache: bool = True
    progress: bool = True
    language: str | None = None
    transforms: Any = "all"
    transform_columns: tuple[str, ...] | None = None
    attacks: tuple[str, ...] = ()
    attack_budget: int = 500
    attack_mlm: str | None = None
    attack_max_samples: int | None = None
    max_examples: int = 25
    slice_columns: tuple[str, ...] | None = None  # relation rates per value of these columns (evaluation/slices.py)
    max_slice_values: int = 20  # per slice column: the most frequent values sliced, the rest skipped
    measure_speed: bool = False  # student_speedup (evaluation/speed.py): both models local pyfuncs
    threads: Any = None  # torch threads of inference and timing (mlflow_metacompress/threads.py); None/"auto": default
    precision: str | None = (
        None  # inference precision of code classifiers (precision.py); None: $METACOMPRESS_PRECISION
    )
    inference: str = "torch"  # "onnxruntime": both models queried through ONNX Runtime (adapters/onnx.py)
    engine: str = "local"  # "spark": transforms + inference on a SparkSession (evaluation/spark_engine.py)
    attack_engine: str = (
        "driver"  # "spark" (needs engine "spark"): attacked samples split over executors (evaluation/spark_attacks.py)
    )
    # {"queries", "search", "seed", "rows"}: teacher–student deviation search (evaluation/deviation.py)
    deviation: Any = None
    # rewrites the student trained on, or "auto" (its run tag): pooled apart, /metamorphic_seen (evaluation/trained.py)
    trained_transforms: Any = None
    sources: tuple[tuple[str, Source], ...] = field(default=(), repr=False, compare=False, metadata={"internal": True})

    @property
    def static(self) -> bool:
        return self.teacher_prob_columns is not None or self.student_prob_columns is not None

    @property
    def relation_config(self) -> RelationConfig:
        """The registered relations' parameters: each one that is a key here (``kl_threshold``, …)
        takes this config's value, any other its default."""
        from ..relations.base import relation_params

        return RelationConfig(**{name: getattr(self, name) for name in relation_params() if hasattr(self, name)})

    @property
    def cache_path(self) -> Path | None:
        """Where predictions are cached (:func:`mlflow_metacompress.cache.location`, resolved
        now), or None when ``use_cache`` is false."""
        from ..cache import location

        if not self.use_cache:
            return None
        return location(self.cache_dir)

    def transform_names(self) -> list[str]:
        """The transformations to run: ``"all"`` → every one for ``language``; none in static mode.

        A name the transformation library does not know for ``language`` is rejected with
        the known names (:func:`parse_config` calls this once, before any model runs).
        """
        if self.static or not self.code_columns or self.transforms in (None, [], (), ""):
            return []
        from ..transforms import list_transforms

        if self.language is None:
            raise MetaCompressInputError("transformations need the code's language; set evaluator_config['language']")
        available = list_transforms(self.language)
        if self.transforms == "all":
            return list(available)
        names = [self.transforms] if isinstance(self.transforms, str) else list(self.transforms)
        unknown = [n for n in names if n not in available]
        if unknown:
            raise MetaCompressInputError(
                f"transforms {unknown} are not available for {self.language!r}; available: {available}"
            )
        return names

    def config_sources(self) -> dict[str, Source]:
        """For every key: ``given`` by the user, ``default``, ``inferred`` from the columns
        or ``detected`` from the code."""
        resolved = dict(self.sources)
        return {key: resolved.get(key, "default") for key in config_keys()}

    def detected_values(self) -> dict[str, Any]:
        """The values :func:`parse_config` inferred or detected (JSON-safe)."""
        return {
            key: _loggable(getattr(self, key)) for key, source in self.sources if source in ("inferred", "detected")
        }

    def as_loggable(self) -> dict[str, Any]:
        """The config as the user set it, JSON-safe (the teacher shown by URI or type).

        Values that were inferred or detected appear as the user left them (``None``);
        :meth:`detected_values` and :meth:`config_sources` report them separately.
        """
        out = {}
        auto = {key for key, source in self.sources if source in ("inferred", "detected")}
        for key in config_keys():
            out[key] = None if key in auto else _loggable(getattr(self, key))
        for model in ("teacher", "reference"):
            if not isinstance(out[model], (str, type(None))):
                out[model] = f"<{type(getattr(self, model)).__name__}>"
        return out


def config_keys() -> list[str]:
    """The keys ``evaluator_config`` accepts."""
    return [f.name for f in fields(EvaluatorConfig) if not f.metadata.get("internal")]


def _loggable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
