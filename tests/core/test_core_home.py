"""The suite never touches the real home directory: ``tests/conftest.py`` points ``HOME``
and the per-user folders at a session temporary folder before anything is imported, and
the metacompress cache location is read when used, so it follows (``.ci/run`` also
checks that nothing under the real ``$HOME`` changed during the tests)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mlflow_metacompress import cache

REPO = Path(__file__).resolve().parents[2]


def _under(path: str | Path, folder: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def test_home_is_a_session_temporary_folder():
    home = os.environ["HOME"]
    assert _under(home, tempfile.gettempdir()) and Path(home).name.startswith("metacompress-tests-home-")
    assert not _under(home, pwd.getpwuid(os.getuid()).pw_dir)  # the account's real home
    assert Path.home() == Path(home) and Path("~").expanduser() == Path(home)


def test_default_cache_location_resolves_under_the_temporary_home(monkeypatch):
    for var in (cache.ENV, cache.LEGACY_ENV):
        monkeypatch.delenv(var, raising=False)
    home = Path(os.environ["HOME"])
    assert cache.location() == home / ".cache" / "mlflow-metacompress"  # via XDG_CACHE_HOME
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.location() == home / ".cache" / "mlflow-metacompress"  # via ~ itself
    monkeypatch.setenv("HOME", str(home / "elsewhere"))  # read when used, not frozen at import
    assert cache.location() == home / "elsewhere" / ".cache" / "mlflow-metacompress"


@pytest.mark.slow
def test_subprocesses_inherit_the_temporary_home(tmp_path):
    """A child process (CLI runs, MLproject recipes) resolves every per-user folder the
    usual suspects write to under the temporary home."""
    code = (
        "import json, os, matplotlib, huggingface_hub.constants as hf\n"
        "from mlflow_metacompress import cache\n"
        "print(json.dumps({'cache': str(cache.location()), 'matplotlib': matplotlib.get_configdir(),"
        " 'hf': hf.HF_HOME, 'hf_hub_cache': hf.HF_HUB_CACHE, 'home': os.path.expanduser('~')}))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env, timeout=120
    )
    folders = json.loads(out.stdout.strip().splitlines()[-1])
    for name, folder in folders.items():
        assert _under(folder, os.environ["HOME"]), (name, folder)
