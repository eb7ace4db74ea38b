"""Where an evaluation's heavy work runs: one :class:`Engine`, chosen once.

``evaluator_config["engine"]`` names it (:data:`ENGINES`): ``local`` (this process) or
``spark`` (transformations and inference on a SparkSession,
:class:`mlflow_metacompress.evaluation.spark_engine.SparkEngine`). :func:`get_engine`
imports the chosen engine's module only, so a local evaluation never imports a Spark
module; the evaluation loop (:func:`~.loop.run_evaluation`) then asks the engine for
its session and its variant producers and judges whatever they produce, with no
per-engine branches. Static mode (precomputed probabilities) runs no model, so it always
runs locally.

An engine implements three steps:

- :meth:`Engine.bind`: before any model loads, take what the engine needs from the
  configuration and the student (the Spark engine checks that both models are URIs it
  can ship to executors, and refuses anything else by name);
- :meth:`Engine.session`: the context the whole evaluation runs in (a SparkSession);
- :meth:`Engine.sources`: the variant producers (:data:`~.variants.SOURCES` for the
  local engine), possibly computed ahead (the Spark engine transforms on executors and
  runs both models over every variant in one ``spark_udf`` pass per model);
- :meth:`Engine.predicted`: the :class:`~.predictions.PredictionTable` of what it
  predicted ahead (None for the local engine), which the loop's predict step reads
  instead of running the models again.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from ..adapters.predictors import Predictor
    from .config_model import EvaluatorConfig
    from .predictions import PredictionTable
    from .variant_types import VariantSource

# name → "module:class"; imported when chosen, never before
ENGINES: dict[str, str] = {
    "local": "mlflow_metacompress.evaluation.engines:LocalEngine",
    "spark": "mlflow_metacompress.evaluation.spark_engine:SparkEngine",
}

__all__ = ["ENGINES", "Engine", "LocalEngine", "engine_names", "get_engine"]


class Engine(Protocol):
    """Where one evaluation's transformations, inference and attacks run."""

    name: str

    def bind(self, cfg: EvaluatorConfig, student: Any, model_id: str | None = None) -> None:
        """Check and keep what the engine needs before any model loads; raise
        :class:`~.validation.MetaCompressInputError` naming what it cannot run."""
        ...

    def session(self) -> AbstractContextManager[Any]:
        """The context the evaluation runs in (entered once, around the whole loop)."""
        ...

    def sources(
        self, df: pd.DataFrame, cfg: EvaluatorConfig, teacher: Predictor | None, student: Predictor | None
    ) -> tuple[VariantSource, ...]:
        """The variant producers the loop runs after the original, in order."""
        ...

    def predicted(self) -> PredictionTable | None:
        """The predictions the engine made while producing :meth:`sources` (the Spark
        engine's ``spark_udf`` pass), by variant name; None when it made none."""
        ...


class LocalEngine:
    """Everything in this process: the producers of :mod:`.variants` as they are, then the
    deviation search (:mod:`.deviation`, only when ``evaluator_config["deviation"]`` is set)."""

    name = "local"

    def bind(self, cfg: EvaluatorConfig, student: Any, model_id: str | None = None) -> None:
        """Nothing to check: any model the adapters accept runs here."""

    def session(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def sources(
        self, df: pd.DataFrame, cfg: EvaluatorConfig, teacher: Predictor | None, student: Predictor | None
    ) -> tuple[VariantSource, ...]:
        from .deviation import deviations
        from .variants import SOURCES

        return (*SOURCES, deviations)

    def predicted(self) -> PredictionTable | None:
        """None: the loop predicts every variant here (:mod:`.predict`)."""
        return None


def engine_names() -> list[str]:
    """The engines ``evaluator_config["engine"]`` may name."""
    return list(ENGINES)


def get_engine(cfg: EvaluatorConfig) -> Engine:
    """The engine ``cfg`` chose (``local`` in static mode, which runs no model); only its
    module is imported."""
    name = "local" if cfg.static else cfg.engine
    if name not in ENGINES:
        from ..adapters.checks import MetaCompressInputError

        raise MetaCompressInputError(
            f"evaluator_config['engine'] must be {' or '.join(map(repr, ENGINES))}; got {name!r}"
        )
    module, _, cls = ENGINES[name].partition(":")
    engine: Engine = getattr(import_module(module), cls)()
    return engine
