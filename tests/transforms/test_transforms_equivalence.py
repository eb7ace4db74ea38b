"""Semantic equivalence by execution (issue 3): every transformed program compiles and prints
exactly what the original printed. Oracles: gcc, javac/java and the Python interpreter."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_metacompress.transforms import list_transforms
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import parses_cleanly, run
from tests.support.programs import run_java_classes

PROGRAMS = Path(__file__).parents[1] / "programs"
SEEDS = (0, 1)


def _variants(code: str, language: str) -> list[tuple[str, int, str]]:
    """(transformation, seed, code) for every transformation that changes the program."""
    src = Source(code, language)
    assert not src.has_error
    out = []
    for name in list_transforms(language):
        for seed in SEEDS:
            result = run(src, name, seed, verify=False)  # no safety net: broken output must show
            if result.changed:
                assert parses_cleanly(result.code, language), (name, seed, result.code)
                out.append((name, seed, result.code))
    return out


def _check_coverage(variants: list[tuple[str, int, str]], language: str, minimum: int) -> None:
    names = {name for name, _, _ in variants}
    assert len(names) >= minimum, f"only {sorted(names)} changed the {language} program"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@pytest.mark.parametrize("program", sorted((PROGRAMS / "c").glob("*.c")), ids=lambda p: p.name)
def test_c_programs_behave_identically(program: Path, tmp_path: Path) -> None:
    def build_and_run(code: str, tag: str) -> str:
        src_file, exe = tmp_path / f"{tag}.c", tmp_path / tag
        src_file.write_text(code)
        comp = subprocess.run(
            ["gcc", "-std=gnu11", "-O0", "-w", "-o", str(exe), str(src_file)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert comp.returncode == 0, f"{tag} does not compile:\n{comp.stderr}\n{code}"
        return subprocess.run([str(exe)], capture_output=True, text=True, timeout=30, check=True).stdout

    original = program.read_text()
    expected = build_and_run(original, "original")
    variants = _variants(original, "c")
    _check_coverage(variants, "c", 10 if program.name == "multi.c" else 9)
    for name, seed, code in variants:
        assert build_and_run(code, f"{name}_{seed}") == expected, f"{name} seed {seed} changed behaviour:\n{code}"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_oracle_detects_a_behaviour_change(tmp_path: Path) -> None:
    """Negative control: a non-equivalent edit must change the printed output."""
    original = (PROGRAMS / "c" / "numeric.c").read_text()
    mutant = original.replace("if (a[j] > a[j + 1])", "if (a[j] < a[j + 1])")
    assert mutant != original
    outs = []
    for tag, code in (("orig", original), ("mutant", mutant)):
        (tmp_path / f"{tag}.c").write_text(code)
        subprocess.run(["gcc", "-w", "-o", str(tmp_path / tag), str(tmp_path / f"{tag}.c")], check=True, timeout=60)
        outs.append(subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, check=True).stdout)
    assert outs[0] != outs[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="JDK not installed")
def test_java_programs_behave_identically(tmp_path: Path) -> None:
    """All variants compile in one javac call (one package each) and run in one JVM."""
    classes, sources, labels = [], [], {}
    for n_prog, program in enumerate(sorted((PROGRAMS / "java").glob("*.java"))):
        original = program.read_text()
        variants = [("original", 0, original)] + _variants(original, "java")
        _check_coverage(variants[1:], "java", 10)
        for n, (name, seed, code) in enumerate(variants):
            package = f"p{n_prog}v{n}"
            path = tmp_path / package / program.name
            path.parent.mkdir()
            path.write_text(f"package {package};\n{code}")
            sources.append(str(path))
            classes.append(f"{package}.{program.stem}")
            labels[classes[-1]] = (program.name, name, seed, code)
    outputs = run_java_classes(tmp_path, sources, classes)
    for cls in classes:
        prog, name, seed, code = labels[cls]
        original_cls = next(c for c in classes if labels[c][0] == prog and labels[c][1] == "original")
        assert outputs[cls] == outputs[original_cls], f"{prog}: {name} seed {seed} changed behaviour:\n{code}"


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted((PROGRAMS / "python").glob("*.py")), ids=lambda p: p.name)
def test_python_programs_behave_identically(program: Path, tmp_path: Path) -> None:
    def execute(code: str, tag: str) -> str:
        path = tmp_path / f"{tag}.py"
        path.write_text(code)
        res = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, f"{tag} failed:\n{res.stderr}\n{code}"
        return res.stdout

    original = program.read_text()
    expected = execute(original, "original")
    variants = _variants(original, "python")
    _check_coverage(variants, "python", 10)
    for name, seed, code in variants:
        assert execute(code, f"{name}_{seed}") == expected, f"{name} seed {seed} changed behaviour:\n{code}"


def _load(code: str, name: str):
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(code, name, "exec"), module.__dict__)  # noqa: S102 - test oracle
    return module


_STDLIB_CALLS = {
    "textwrap": lambda m: (
        m.wrap("The quick brown fox jumps over the lazy dog " * 3, 17),
        m.dedent("    a\n      b\n    c"),
        m.shorten("Hello  world, again here", 15),
        m.indent("x\n\ny", "> "),
    ),
    "bisect": lambda m: [(m.bisect_left([1, 2, 2, 5, 8], v), m.bisect_right([1, 2, 2, 5, 8], v)) for v in range(10)],
    "colorsys": lambda m: [
        tuple(round(c, 6) for c in m.rgb_to_hsv(r / 7, g / 5, 0.3))
        + tuple(round(c, 6) for c in m.hls_to_rgb(r / 7, g / 5, 0.6))
        for r in range(8)
        for g in range(6)
    ],
    "difflib": lambda m: (
        m.SequenceMatcher(None, "abxcd" * 3, "abcd" * 4).get_opcodes(),
        m.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]),
        list(m.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"])),
        list(m.ndiff(["one\n", "two\n"], ["ore\n", "two\n"])),
    ),
}


@pytest.mark.parametrize("module_name", sorted(_STDLIB_CALLS))
def test_python_stdlib_modules_behave_identically(module_name: str) -> None:
    """Real code: whole stdlib modules, transformed, loaded and called with fixed inputs."""
    path = importlib.util.find_spec(module_name).origin
    original = Path(path).read_text()
    call = _STDLIB_CALLS[module_name]
    expected = call(_load(original, f"orig_{module_name}"))
    src = Source(original, "python")
    changed = 0
    for name in list_transforms("python"):
        result = run(src, name, 0, verify=False)
        if not result.changed:
            continue
        changed += 1
        assert call(_load(result.code, f"{name}_{module_name}")) == expected, f"{name} on {module_name}"
    assert changed >= 4
