"""MLproject entry point ``reproduce``: the MetaCompress study on real data, resumable
(see :mod:`mlflow_metacompress.study.stages`)."""

from mlflow_metacompress.study.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
