"""Arguments shared by the recipe scripts (the MLproject's entry points)."""

from __future__ import annotations

import argparse
import logging


def add_data_args(parser: argparse.ArgumentParser) -> None:
    """``--task``, ``--data-dir``, ``--profile``, ``--seed``, ``--progress``."""
    parser.add_argument("--task", default="vulnerability", help="vulnerability or clone")
    parser.add_argument("--data-dir", default="",
                        help="empty: the embedded generated data; else a CodeXGLUE Devign/BigCloneBench folder")
    parser.add_argument("--profile", default="quick", help="quick (2 CPU cores, minutes) or paper (GPU, hours)")
    parser.add_argument("--seed", type=lambda s: int(float(s)), default=0, help="random seed (an integer)")
    parser.add_argument("--progress", default="true", choices=["true", "false"], help="show progress bars")


def setup() -> str:
    """Log at INFO and point tracking/registry at the project's store; return its URI."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from mlflow_metacompress.pipeline import setup_tracking

    return setup_tracking()
