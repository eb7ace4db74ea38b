"""The docs' generated parts follow the code: the ``evaluator_config`` keys table
(docs/hooks/evaluator_config.py) lists exactly the keys the evaluator accepts, each
described, and it and every include (README sections, the policy presets, CITATION.cff) are
written into the Markdown itself (docs/hooks/generated.py) and up to date, so the pages read
in the repository as on the site. ``python docs/hooks/generated.py`` regenerates them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from mlflow_metacompress.evaluation.config import EvaluatorConfig, config_keys

REPO = Path(__file__).resolve().parents[2]


def load_hook(name: str = "evaluator_config"):
    spec = importlib.util.spec_from_file_location(f"{name}_hook", REPO / "docs" / "hooks" / f"{name}.py")
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
    source = (REPO / "mlflow_metacompress" / "evaluation" / "config_model.py").read_text()
    extra = source.replace('    engine: str = "local"', '    brand_new_key: int = 3\n    engine: str = "local"', 1)
    assert extra != source
    (tmp_path / "config_model.py").write_text(extra)
    hook.SOURCE = tmp_path / "config_model.py"
    with caplog.at_level("WARNING", logger="mkdocs.hooks.evaluator_config"):
        hook.keys_table()
    assert "'brand_new_key' has no description" in caplog.text


def test_pages_find_the_readme_sections_they_include():
    readme = (REPO / "README.md").read_text()
    for page in (REPO / "docs").rglob("*.md"):
        for target in re.findall(r"<!-- generated: include README\.md:(\w+)", page.read_text()):
            assert f"<!-- --8<-- [start:{target}] -->" in readme, (page, target)
            assert f"<!-- --8<-- [end:{target}] -->" in readme, (page, target)


def test_generated_parts_are_written_into_the_pages_and_up_to_date():
    """Regenerate with ``python docs/hooks/generated.py``."""
    gen = load_hook("generated")
    pages = {p.relative_to(REPO).as_posix() for p in gen.pages()}
    assert {"docs/api/evaluator.md", "docs/getting-started.md", "docs/guide/gates.md", "docs/citing.md"} <= pages
    for page in gen.pages():
        text = page.read_text()
        _, stale = gen.refresh(text, str(page))
        assert not stale, f"{page.relative_to(REPO)} is out of date ({stale}): run python docs/hooks/generated.py"
    # the table in the repository's page is the code's table, and the includes hold their sources
    evaluator = (REPO / "docs" / "api" / "evaluator.md").read_text()
    assert load_hook().keys_table() in evaluator
    for key in config_keys():
        assert f"| `{key}` |" in evaluator, key
    readme = (REPO / "README.md").read_text()
    fresh = readme.split("<!-- --8<-- [start:fresh] -->\n")[1].split("<!-- --8<-- [end:fresh] -->")[0]
    assert fresh in (REPO / "docs" / "getting-started.md").read_text()
    standard = (REPO / "mlflow_metacompress" / "gates" / "presets" / "standard.yaml").read_text()
    gates = (REPO / "docs" / "guide" / "gates.md").read_text()
    assert "\n".join("    " + line if line else "" for line in standard.rstrip().split("\n")) in gates  # in its tab
    assert (REPO / "CITATION.cff").read_text().rstrip() in (REPO / "docs" / "citing.md").read_text()
    # only the changelog page still includes at build time (the whole CHANGELOG.md)
    snippets = [p.name for p in (REPO / "docs").rglob("*.md") if re.search(r"^\s*--8<--", p.read_text(), re.M)]
    assert snippets == ["changelog.md"]


def test_a_stale_part_is_found_and_regenerated(tmp_path, monkeypatch):
    gen = load_hook("generated")
    page = (REPO / "docs" / "api" / "evaluator.md").read_text()
    edited = page.replace("| `kl_threshold` |", "| `kl_threshold_old` |", 1)
    assert edited != page
    fresh, stale = gen.refresh(edited)
    assert stale == ["evaluator-config-keys"] and fresh == page
    # the command rewrites the page in place; --check only reports (exit 1)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "evaluator.md").write_text(edited)
    monkeypatch.setattr(gen, "DOCS", docs)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "section", lambda path, name: "unused")
    assert gen.main(["--check"]) == 1 and (docs / "evaluator.md").read_text() == edited
    assert gen.main([]) == 0 and (docs / "evaluator.md").read_text() == page
    assert gen.main(["--check"]) == 0


def test_a_bad_include_or_an_unclosed_part_fails_naming_it():
    gen = load_hook("generated")
    with pytest.raises(gen.GeneratedError, match=r"include README\.md:nope: README\.md needs exactly one"):
        gen.refresh("<!-- generated: include README.md:nope -->\n<!-- end generated -->")
    with pytest.raises(gen.GeneratedError, match=r"include 'no/such\.md': no such file"):
        gen.refresh("<!-- generated: include no/such.md -->\n<!-- end generated -->")
    with pytest.raises(gen.GeneratedError, match=r"has no '<!-- end generated -->'"):
        gen.refresh("<!-- generated: evaluator-config-keys -->\ntext")
