"""Every code block in the README and the docs is checked or says why not (issue 33).

A fenced block outside a generated part (those are copies of files that
``tests/core/test_docs.py`` keeps in step) is preceded by one marker line::

    <!-- docs-block: run -->                   Python, executed here as written, in a temporary folder
    <!-- docs-block: commands -->              every command parsed by the real parser: metacompress's
                                               argparse, mlflow's click (for `mlflow run`, the MLproject's
                                               entry point and parameters too), pip's extras in pyproject
    <!-- docs-block: policy [PRESET] -->       YAML loaded as a gate policy (PRESET: equal to its thresholds)
    <!-- docs-block: bibtex -->                the authors and arXiv id of CITATION.cff's preferred citation
    <!-- docs-block: tested-by tests/X.py -->  executed or checked by that test file, which names the page
    <!-- docs-block: illustrative REASON -->   not run, for the reason given

(blank lines, a snippet section's start marker and a ``<!-- sample: … -->`` line may stand between
the marker and the fence).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import fresh_mlflow_stores

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
MARKER = re.compile(r"^\s*<!-- docs-block: (\S+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\w+)")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    kind: str | None
    arg: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        generated = False
        i = 0
        while i < len(lines):
            line = lines[i]
            if "<!-- generated: " in line:
                generated = True
            elif "<!-- end generated -->" in line:
                generated = False
            m = FENCE.match(line)
            if m is None:
                i += 1
                continue
            indent, end = m[1], i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if not generated:
                j = i - 1
                while j >= 0 and (
                    not lines[j].strip() or "<!-- --8<-- [start:" in lines[j] or "<!-- sample:" in lines[j]
                ):
                    j -= 1
                mark = MARKER.match(lines[j]) if j >= 0 else None
                text = "\n".join(x[len(indent) :] for x in lines[i + 1 : end])
                found.append(Block(page, i + 1, m[2], mark[1] if mark else None, mark[2] if mark else "", text))
            i = end + 1
    return found


BLOCKS = blocks()


def of_kind(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.kind == kind]


def _test_file(arg: str) -> Path:
    """The test file a ``tested-by`` marker names: ``tests/<package>/test_X.py``, or the flat
    ``tests/test_X.py`` of before the per-package folders when exactly one folder holds it."""
    path = REPO / arg
    if path.is_file() or path.parent != REPO / "tests":
        return path
    found = sorted((REPO / "tests").glob(f"*/{path.name}"))
    return found[0] if len(found) == 1 else path


def test_every_block_is_marked_and_every_reason_is_given():
    unmarked = [b.where for b in BLOCKS if b.kind is None]
    assert not unmarked, f"code blocks without a <!-- docs-block: ... --> marker: {unmarked}"
    known = {"run", "commands", "policy", "bibtex", "tested-by", "illustrative"}
    assert {b.kind for b in BLOCKS} <= known, {b.where: b.kind for b in BLOCKS if b.kind not in known}
    for b in of_kind("illustrative"):
        assert len(b.arg.split()) >= 3, f"{b.where}: say why the block is not run"
    for b in of_kind("tested-by"):
        test = _test_file(b.arg)
        assert test.is_file() and b.arg.startswith("tests/"), f"{b.where}: {b.arg} is not a test file"
        assert b.page.name in test.read_text(), f"{b.where}: {b.arg} never names {b.page.name}"
    assert len(BLOCKS) >= 20 and len(of_kind("illustrative")) <= len(BLOCKS) // 3


@pytest.mark.slow
@pytest.mark.parametrize("block", of_kind("run"), ids=lambda b: b.where)
def test_python_block_runs_as_written(block, tmp_path, monkeypatch, capsys):
    import mlflow

    assert block.lang == "python", block.where
    monkeypatch.chdir(tmp_path)
    fresh_mlflow_stores()  # a relative sqlite:///mlflow.db is this folder's, not an earlier test's
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    try:
        exec(compile(block.text, block.where, "exec"), {})
    finally:
        if mlflow.active_run():
            mlflow.end_run()
        mlflow.set_tracking_uri(None)
    out = capsys.readouterr().out
    assert out.strip(), f"{block.where} printed nothing"
    assert "Traceback" not in out


def _extras() -> dict[str, list[str]]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _commands(text: str) -> list[list[str]]:
    """Shell lines → argument lists: continuations joined, comments, `&&`, `&`, leading
    VAR=value assignments and `export` lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        for part in line.split("&&"):
            args = shlex.split(part, comments=True)
            while args and re.match(r"^[A-Z_][A-Z0-9_]*=", args[0]):
                args = args[1:]
            if args and args[-1] == "&":
                args = args[:-1]
            if args and args[0] != "export":
                out.append(args)
    return out


def _check_metacompress(args: list[str]) -> None:
    from mlflow_metacompress.cli import build_parser

    build_parser().parse_args(args[1:])  # SystemExit(2) on an unknown subcommand, flag or choice


def _check_mlflow(args: list[str]) -> None:
    import click
    from mlflow.cli import cli

    command = cli.get_command(click.Context(cli), args[1])  # `ui` is an alias of `server`
    assert command is not None, f"{args}: mlflow has no command {args[1]!r}"
    ctx = command.make_context(f"mlflow {args[1]}", list(args[2:]), resilient_parsing=False)
    if args[1] == "run":
        from mlflow.projects._project_spec import load_project

        entry = load_project(str(REPO)).get_entry_point(ctx.params.get("entry_point") or "main")
        given = {p.split("=", 1)[0] for p in ctx.params.get("param_list") or ()}
        assert given <= set(entry.parameters), f"{args}: {given - set(entry.parameters)} not in the MLproject"


def _check_pip(args: list[str]) -> None:
    extras = _extras()
    for arg in args[2:]:
        m = re.fullmatch(r'\.\[([\w,]+)\]|"?\.\[([\w,]+)\]"?', arg)
        if m:
            names = (m[1] or m[2]).split(",")
            assert set(names) <= set(extras), f"{args}: no extra {set(names) - set(extras)} in pyproject.toml"


TOOLS = {"mkdocs": "docs", "pre-commit": "lint", "twine": "release", "build": "release"}


def _check_tool(args: list[str]) -> None:
    name = args[2] if args[:2] == ["python", "-m"] else args[0]
    if name == "pytest":
        assert "python -m pytest -q\n" in (REPO / ".ci" / "run").read_text()  # CI runs every test
        if args[4:] == ["-m", "not slow"]:  # the fast lane: the marker is registered in pyproject.toml
            assert '"slow: ' in (REPO / "pyproject.toml").read_text()
            args = args[:4]
        assert args == ["python", "-m", "pytest", "-q"], args
        return
    extra = TOOLS[name]  # a KeyError names a command this test does not know how to check
    assert any(r.split("[")[0].split(">")[0].strip() == name for r in _extras()[extra]), (name, extra)


@pytest.mark.slow
@pytest.mark.parametrize("block", of_kind("commands"), ids=lambda b: b.where)
def test_commands_parse_with_the_real_parsers(block):
    commands = _commands(block.text)
    assert commands, block.where
    for args in commands:
        if args[0] == "metacompress":
            _check_metacompress(args)
        elif args[0] == "mlflow":
            _check_mlflow(args)
        elif args[:2] == ["pip", "install"]:
            _check_pip(args)
        else:
            _check_tool(args)


@pytest.mark.parametrize("block", of_kind("policy"), ids=lambda b: b.where)
def test_policy_blocks_load(block):
    from mlflow_metacompress.gates.policy import GatePolicy, load_policy

    data = yaml.safe_load(block.text)
    if block.arg:  # the thresholds of a preset, quoted: equal to the preset's
        preset = load_policy(block.arg)
        thresholds = data.get("thresholds", data)
        quoted = GatePolicy.from_mapping({"name": block.arg, "thresholds": thresholds}).thresholds
        assert quoted == preset.thresholds, block.where
    else:
        assert GatePolicy.from_mapping(data).thresholds


@pytest.mark.parametrize("block", of_kind("bibtex"), ids=lambda b: b.where)
def test_bibtex_matches_citation_cff(block):
    paper = yaml.safe_load((REPO / "CITATION.cff").read_text())["preferred-citation"]
    authors = " and ".join(f"{a['family-names']}, {a['given-names']}" for a in paper["authors"])
    assert f"author        = {{{authors}}}" in block.text
    assert "2511.05476" in block.text and paper["title"] in block.text and str(paper["year"]) in block.text
