"""The code MLflow runs to build a logged metacompress classifier (models from code).

:func:`~.pyfunc.log_code_classifier` logs ``python_model=<this file>``: MLflow copies the
file into the model and runs it on load, so the model is rebuilt from code and the
``hf_dir`` artifact, and nothing is pickled (no cloudpickle, no "may execute arbitrary
code" warning). See https://mlflow.org/docs/latest/ml/model/models-from-code/.
"""

import mlflow

from mlflow_metacompress.models.pyfunc import CodeClassifierPyfunc

mlflow.models.set_model(CodeClassifierPyfunc())
