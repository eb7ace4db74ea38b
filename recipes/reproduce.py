"""MLproject entry point ``reproduce``: the MetaCompress study on real data, resumable
(see :mod:`mlflow_metacompress.pipeline.reproduce`)."""

from mlflow_metacompress.pipeline.repro_cli import main

if __name__ == "__main__":
    raise SystemExit(main())
