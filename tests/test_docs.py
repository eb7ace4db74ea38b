"""The docs site's generated parts follow the code: the ``evaluator_config`` keys table
(docs/hooks/evaluator_config.py) lists exactly the keys the evaluator accepts, each
described, and the pages the README includes by snippet still find their sections."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from mlflow_metacompress.evaluation.config import EvaluatorConfig, config_keys

REPO = Path(__file__).resolve().parents[1]


def load_hook():
    spec = importlib.util.spec_from_file_location(
        "evaluator_config_hook", REPO / "docs" / "hooks" / "evaluator_config.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_keys_table_lists_every_evaluator_config_key_with_its_default():
    hook = load_hook()
    fields = hook.config_fields()
    assert [name for name, _, _ in fields] == config_keys()
    assert set(hook.DESCRIPTIONS) == set(config_keys())
    defaults = {name: default for name, _, default in fields}
    for key in config_keys():  # the AST's default is the dataclass's own
        assert eval(defaults[key]) == getattr(EvaluatorConfig(), key), key  # noqa: S307 (literals from our own source)
    table = hook.keys_table()
    assert table.count("\n| `") == len(config_keys())
    assert "<code>tuple[str, ...] &#124; None</code>" in table  # a pipe in a type does not split the cell


def test_keys_table_warns_on_an_undescribed_key(tmp_path, caplog):
    hook = load_hook()
    source = (REPO / "mlflow_metacompress" / "evaluation" / "config.py").read_text()
    extra = source.replace('    engine: str = "local"', '    brand_new_key: int = 3\n    engine: str = "local"', 1)
    assert extra != source
    (tmp_path / "config.py").write_text(extra)
    hook.SOURCE = tmp_path / "config.py"
    with caplog.at_level("WARNING", logger="mkdocs.hooks.evaluator_config"):
        hook.keys_table()
    assert "'brand_new_key' has no description" in caplog.text


def test_pages_find_the_readme_sections_they_include():
    readme = (REPO / "README.md").read_text()
    for page in (REPO / "docs").rglob("*.md"):
        for target in re.findall(r'--8<-- "README\.md:(\w+)"', page.read_text()):
            assert f"<!-- --8<-- [start:{target}] -->" in readme, (page, target)
            assert f"<!-- --8<-- [end:{target}] -->" in readme, (page, target)
