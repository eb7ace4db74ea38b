"""The ``evaluator_config`` keys table, generated from the code.

``docs/hooks/generated.py`` writes it into a page between ``<!-- generated:
evaluator-config-keys -->`` and ``<!-- end generated -->``: a table of every field of
:class:`mlflow_metacompress.evaluation.config_model.EvaluatorConfig` (the keys
``evaluator_config`` accepts): its name, type and default read from the dataclass's source
with :mod:`ast` (so the build never imports the package, and documents the checkout it
runs in), and its description from :data:`DESCRIPTIONS`. A key without a description, or a
description of a key that no longer exists, is a warning, which ``mkdocs build --strict``
turns into a failed build (and ``tests/core/test_docs.py`` into a failed test): the table cannot
fall behind the code.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.evaluator_config")

SOURCE = Path(__file__).resolve().parents[2] / "mlflow_metacompress" / "evaluation" / "config_model.py"

DESCRIPTIONS: dict[str, str] = {
    "teacher": (
        "The teacher, the oracle: a `models:/` or `runs:/` URI, a loaded `PyFuncModel`, or a callable "
        "`DataFrame → probabilities`. Required unless both probability column lists are given (static mode)."
    ),
    "code_columns": (
        "The code column(s) of `data`: one for a single function, two (e.g. `func1`, `func2`) for clone "
        "pairs. Inferred from the columns when unset."
    ),
    "teacher_prob_columns": (
        "Static mode: the columns of `data` holding the teacher's class probabilities (with `model=None`)."
    ),
    "student_prob_columns": "Static mode: the columns of `data` holding the student's class probabilities.",
    "reference": (
        "A second model of the teacher's task (e.g. the teacher retrained with another seed), in any form "
        "`teacher` accepts; judged against the teacher on the rows the student is judged on, it adds the "
        "`reference/`, `excess/` and `increment/` metrics. See "
        "[reading rates against a retrained teacher](../guide/evaluating.md#reading-rates-against-a-retrained-teacher)."
    ),
    "reference_prob_columns": "Static mode: the columns of `data` holding the reference model's class probabilities.",
    "kl_threshold": "MR2: a sample violates when KL(P_T‖P_S) exceeds it.",
    "confidence_threshold": "MR3: the teacher confidence τ that puts a sample in the high-confidence set H.",
    "calibration_bins": "MR4 and ECE: the number of confidence bins (at most 1,000).",
    "eca_threshold": "MR4: a bin, and a sample in it, violates when the confidence gap exceeds it.",
    "batch_size": "Rows per model call.",
    "seed": "Seeds the transformations, the attacks and the bootstrap resamples.",
    "bootstrap_samples": (
        "Resamples of whole original samples for the 95% percentile-bootstrap intervals "
        "(`<metric>_ci_low`/`_ci_high`); 0 turns intervals off."
    ),
    "metric_prefix": "A prefix for every logged metric name.",
    "cache_dir": "The prediction cache's folder; unset: `$MLFLOW_METACOMPRESS_CACHE`, else the user cache directory.",
    "use_cache": "`false` turns the prediction cache off.",
    "progress": "Progress bars while models run, transformations apply and attacks search.",
    "language": (
        "`c`, `java` or `python`; detected from the code when a transformation or attack needs it and it is unset."
    ),
    "transforms": '`"all"` (every transformation for the language), a list of names, or `[]` for none.',
    "transform_columns": "The code columns to rewrite; unset: the first code column.",
    "attacks": 'Attack recipes to run on the student and the teacher, e.g. `["alert_yang_2022"]`.',
    "attack_budget": "Model queries per attacked sample.",
    "attack_mlm": "A local fill-mask model directory for ALERT's substitutes.",
    "attack_max_samples": "Attack only the first N rows (at least 1); unset: every row.",
    "max_examples": "How many examples the report's example sections show.",
    "slice_columns": (
        "Columns of `data` whose values get their own relation rates, logged as `<rate>/slice:<col>:<value>`."
    ),
    "max_slice_values": (
        "Per slice column, how many of the most frequent values are sliced; the rest are skipped with a warning."
    ),
    "measure_speed": (
        "Time both models (local pyfuncs) side by side and log `student_speedup`, `student_latency_ms` and "
        "`teacher_latency_ms`."
    ),
    "threads": (
        'Torch threads for inference and timing: a positive integer, or `"auto"`/unset for '
        "`$METACOMPRESS_THREADS`, else `$OMP_NUM_THREADS`, else the usable cores minus one (at least 1)."
    ),
    "precision": (
        'Inference precision of code classifiers during the evaluation: `"auto"` (bf16 where the hardware runs it '
        'natively), `"fp32"`, `"bf16"` or `"fp16"`; unset: `$METACOMPRESS_PRECISION`, else auto. Scoped to the '
        "evaluation (the environment is not changed); the main job's gates pass `--precision` here."
    ),
    "inference": (
        '`"torch"`, or `"onnxruntime"`: query both models through ONNX Runtime (each code classifier exported '
        "once, cached by content; metrics equal torch's). A model logged with `mlflow.onnx` always runs on ONNX "
        "Runtime. See the [ONNX guide](../guide/onnx.md)."
    ),
    "deviation": (
        'Search every row for an equivalent variant on which teacher and student disagree: `{"queries": 100, '
        '"search": "dflare", "seed": 0, "rows": null}` (`search`: `dflare`, `random`, `mhm` or `alert`; `rows`: '
        "only the first N; `operators`: the rewrites it may compose; `batch`: variants per paired batch; `depth`: "
        "operators per DFLARE mutant). Logs `deviation_rate` and "
        "`deviation_queries_median`; needs models. See the [deviation guide](../guide/deviation.md)."
    ),
    "trained_transforms": (
        'The rewrites the student trained on (a list), or `"auto"`: those its training run tagged '
        "(`metacompress.trained_transforms`, set by `fidelity` and `repair`). The pooled `…/metamorphic` metrics then "
        "pool only the unseen transformations, the seen ones are pooled apart as `…/metamorphic_seen`, and the "
        "deviation search composes only unseen rewrites. Default: nothing held apart."
    ),
    "engine": '`"local"`, or `"spark"`: transformations and inference on a SparkSession\'s executors.',
    "attack_engine": (
        '`"driver"`, or `"spark"` (needs `engine: "spark"`): the attacked samples split across executors.'
    ),
}


def _internal(value: ast.expr | None) -> bool:
    """A ``field(..., metadata={"internal": True})``: not a key the user gives."""
    if not isinstance(value, ast.Call):
        return False
    for kw in value.keywords:
        if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "internal" and isinstance(v, ast.Constant) and v.value:
                    return True
    return False


def config_fields(source: Path | None = None) -> list[tuple[str, str, str]]:
    """``(key, type, default)`` for every key of ``EvaluatorConfig``, in declaration order."""
    tree = ast.parse((source or SOURCE).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EvaluatorConfig")
    out = []
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name) or _internal(node.value):
            continue
        default = ast.unparse(node.value) if node.value is not None else "required"
        out.append((node.target.id, ast.unparse(node.annotation), default))
    return out


def _cell(text: str) -> str:
    """Markdown table cell text: a pipe would end the cell."""
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    """A code cell: raw HTML, because a table splits on ``|`` even inside backticks."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
    return f"<code>{escaped}</code>"


def keys_table() -> str:
    """The Markdown table: key, type, default, meaning (warns on a key without a description)."""
    fields = config_fields()
    names = [name for name, _, _ in fields]
    for name in names:
        if name not in DESCRIPTIONS:
            log.warning("evaluator_config key %r has no description in docs/hooks/evaluator_config.py", name)
    for name in DESCRIPTIONS:
        if name not in names:
            log.warning("docs/hooks/evaluator_config.py describes %r, which EvaluatorConfig no longer has", name)
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, annotation, default in fields:
        rows.append(f"| `{name}` | {_code(annotation)} | {_code(default)} | {_cell(DESCRIPTIONS.get(name, ''))} |")
    return "\n".join(rows)
