"""Registry-driven MetaCompress gates (Awal, Rochan, Roy, arXiv 2511.05476): a webhook
service that evaluates every new version of a configured student model when MLflow
registers it, promotes it through :func:`mlflow_metacompress.gates.promote`, and undoes a
hand-set alias on a version that did not pass.

Modules: :mod:`.config` (``gates.yaml``), :mod:`.signature` (HMAC verification),
:mod:`.events` (event → jobs), :mod:`.queue` (persistent sqlite queue and delivery
ledger), :mod:`.worker` (evaluation jobs, retries), :mod:`.guard` (alias guard),
:mod:`.app` (FastAPI; body limit, bounded queue waits), :mod:`.limits` and
:mod:`.protocol` (request deadline, idle timeout, connection cap), :mod:`.service`
(wiring, uvicorn), :mod:`.install` (webhook registration), :mod:`.cli`. Nothing heavy is
imported here.
"""
