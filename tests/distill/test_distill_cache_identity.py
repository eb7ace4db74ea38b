"""Soft-label cache keys follow the model, not the version number: a fresh registry that
reuses ``name/1`` for another model must not hit the old entry. The evaluator's prediction
cache uses the same identity (:func:`mlflow_metacompress.cache_keys.model_identity`)."""

import mlflow
import pandas as pd
import pytest

from mlflow_metacompress.adapters.predictors import resolve_model
from mlflow_metacompress.cache_keys import model_identity
from mlflow_metacompress.distill.soft_labels import cache_key


class Const(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"0": [0.5] * len(model_input), "1": [0.5] * len(model_input)})


@pytest.mark.slow
def test_same_version_number_in_two_registries_gives_two_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = pd.DataFrame({"func": ["int f() { return 1; }"]})
    keys, identities = [], []
    for name in ("a", "b"):
        uri = f"sqlite:///{tmp_path}/{name}.db"
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        with mlflow.start_run():
            mlflow.pyfunc.log_model(
                name="m", python_model=Const(), registered_model_name="teacher", pip_requirements=[]
            )
        keys.append((cache_key("models:/teacher/1", df, ["func"]), cache_key("models:/teacher/latest", df, ["func"])))
        identities.append((model_identity("models:/teacher/1"), resolve_model("models:/teacher/1", "teacher").identity))
    assert keys[0][0] == keys[0][1]  # latest pins to the same version: same key
    assert keys[0][0] != keys[1][0]  # same name/1, different model: different key
    assert identities[0][0] == identities[0][1] and identities[1][0] == identities[1][1]  # evaluator = distillation
    assert identities[0][0] != identities[1][0]
