"""The pipeline's budgets: moved to :mod:`mlflow_metacompress.profiles`, below both the
pipeline and ``metacompress distill``, which read them; this module keeps the old import
path (``from mlflow_metacompress.pipeline.profiles import get_profile``) working."""

from __future__ import annotations

from ..profiles import PROFILES, QUICK_POLICY, Profile, get_profile, resolve_policy

__all__ = ["PROFILES", "QUICK_POLICY", "Profile", "get_profile", "resolve_policy"]
