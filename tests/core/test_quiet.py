"""Issue 23, a quiet main job: :func:`mlflow_metacompress.quiet.quiet_libraries` keeps the
libraries' bars and unactionable warnings out of redirected output, and puts everything
back; models are logged from code, so MLflow never warns about pickles. The whole job's
redirected output is checked in ``test_mlproject.py``."""

from __future__ import annotations

import os
import warnings

import mlflow
import pandas as pd
import pytest

from mlflow_metacompress.quiet import quiet_libraries

BARS = ("Loading weights", "Writing model shards")


def _save_and_load(model, tok, folder):
    from mlflow_metacompress.models.classifier import CodeClassifier

    model.save(folder, tok)
    CodeClassifier.load(folder)


def test_transformers_bars_are_off_inside_and_back_after(tiny_classifiers, tmp_path, capfd):
    import transformers.utils.logging as tl

    tok, model, _ = tiny_classifiers
    _save_and_load(model, tok, tmp_path / "loud")
    loud = capfd.readouterr().err
    assert all(bar in loud for bar in BARS), loud  # the control: without the context the bars are drawn
    with quiet_libraries(bars=False):
        assert not tl.is_progress_bar_enabled()
        _save_and_load(model, tok, tmp_path / "quiet")
    quiet = capfd.readouterr().err
    assert not any(bar in quiet for bar in BARS), quiet
    assert tl.is_progress_bar_enabled()


def test_mlflow_bar_switch_is_set_only_while_quiet_and_a_user_value_wins(monkeypatch):
    name = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    monkeypatch.delenv(name, raising=False)
    with quiet_libraries(bars=False, models=False):
        assert os.environ[name] == "false"
    assert name not in os.environ
    monkeypatch.setenv(name, "true")
    with quiet_libraries(bars=False, models=False):
        assert os.environ[name] == "true"
    with quiet_libraries(bars=True):
        assert os.environ[name] == "true"


def test_mlflow_integer_column_hint_is_hidden():
    from mlflow.models import infer_signature

    frame = pd.DataFrame({"func": ["int f;"], "target": [1]})
    with warnings.catch_warnings(record=True) as loud:
        warnings.simplefilter("always")
        infer_signature(frame)
        with quiet_libraries(bars=True):
            infer_signature(frame)
    hints = [str(w.message) for w in loud if "Inferred schema contains integer" in str(w.message)]
    assert len(hints) == 1, hints  # once, outside the context


@pytest.mark.slow
def test_classifiers_are_logged_from_code_without_pickle_warnings(tracking, tiny_classifiers, caplog, recwarn):
    """No cloudpickle: the MLmodel names MLflow's code-model loader and the copied code file,
    the model directory holds no pickle, and loading still yields our PythonModel."""
    import logging
    from pathlib import Path

    from mlflow.models import Model

    from mlflow_metacompress.models.pyfunc import CodeClassifierPyfunc, log_code_classifier
    from tests.conftest import TOY_CODE

    tok, model, _ = tiny_classifiers
    with caplog.at_level(logging.WARNING), mlflow.start_run():
        info = log_code_classifier(model, tok, registered_model_name="from-code", code_columns=["func"])
    assert "arbitrary code" not in caplog.text and "CloudPickle" not in caplog.text
    assert not [w for w in recwarn if "input example" in str(w.message)]
    flavor = Model.load(info.model_uri).flavors["python_function"]
    assert flavor["loader_module"] == "mlflow.pyfunc.loaders.code_model"
    local = Path(mlflow.artifacts.download_artifacts(info.model_uri))
    assert not list(local.rglob("*.pkl")) and (local / "pyfunc_model.py").is_file()
    loaded = mlflow.pyfunc.load_model("models:/from-code/1")
    assert isinstance(loaded.unwrap_python_model(), CodeClassifierPyfunc)
    frame = pd.DataFrame({"func": TOY_CODE})
    expected = model.predict_proba(tok, TOY_CODE)
    assert loaded.predict(frame).to_numpy() == pytest.approx(expected, abs=1e-5)


def test_quiet_fits_hide_lightnings_notices_under_every_package_name(caplog):
    """The search's probes logged "GPU available" and "💡 Tip" through the standalone
    ``pytorch_lightning`` package's logger, and warned about a fit without validation rows
    (issue 22's main job output); inside a quiet fit none of it reaches the log or warnings."""
    import logging
    import warnings

    from mlflow_metacompress.distill.fit_callbacks import quiet_lightning

    with caplog.at_level(logging.INFO), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_lightning(True):
            for name in ("lightning.pytorch.utilities.rank_zero", "pytorch_lightning.utilities.rank_zero"):
                logging.getLogger(name).info("💡 Tip: try installing litlogger")
            warnings.warn("You defined a `validation_step` but have no `val_dataloader`.", UserWarning, stacklevel=1)
        assert not caplog.records and not caught
        logging.getLogger("pytorch_lightning.utilities.rank_zero").info("GPU available: False")  # not quiet: shown
    assert [r.getMessage() for r in caplog.records] == ["GPU available: False"]
