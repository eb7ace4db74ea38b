"""Embedded generated datasets: determinism, balance, parsing, gcc, execution, token leakage."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

from mlflow_metacompress.data.generators import (
    BEHAVIOURS,
    C_PRELUDE,
    CWE_CLASSES,
    generate_clones,
    generate_vulnerability,
    make_splits,
    split_frame,
)

_DEF = re.compile(r"^(?:static )?(?:int|void) (\w+)\(", re.M)
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|==|!=|<=|>=|\+\+|--|->|&&|\|\||[^\s\w]")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.fixture(scope="module")
def vuln():
    return generate_vulnerability(600, seed=7)


@pytest.fixture(scope="module")
def clones():
    return generate_clones(400, seed=7)


def _bad_nodes(code: str, parser) -> list[str]:
    tree = parser.parse(code.encode())
    bad, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            bad.append(f"{node.type}@{node.start_point}")
        stack.extend(node.children)
    return bad


@pytest.fixture(scope="module")
def c_parser():
    tree_sitter = pytest.importorskip("tree_sitter")
    tree_sitter_c = pytest.importorskip("tree_sitter_c")
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_c.language()))


def test_deterministic_for_a_seed_and_sized_by_n():
    a, b = generate_vulnerability(50, seed=3), generate_vulnerability(50, seed=3)
    assert a.equals(b) and len(a) == 50
    assert not a.func.equals(generate_vulnerability(50, seed=4).func)
    c, d = generate_clones(40, seed=3), generate_clones(40, seed=3)
    assert c.equals(d) and len(c) == 40
    assert not c.func1.equals(generate_clones(40, seed=4).func1)
    assert list(a.columns) == ["func", "target", "cwe", "idx"] and list(a.idx) == list(range(50))
    with pytest.raises(ValueError, match="at least 2"):
        generate_vulnerability(1)
    with pytest.raises(KeyError, match="CWE-999"):
        generate_vulnerability(10, cwes=("CWE-999",))


def test_labels_balanced_overall_and_per_class(vuln, clones):
    assert len(CWE_CLASSES) >= 8
    assert vuln.target.sum() == 300 and clones.label.sum() == 200
    per = vuln.groupby(["cwe", "target"]).size().unstack()
    assert set(per.index) == set(CWE_CLASSES) and (per[0] == per[1]).all()
    assert set(clones.behaviour1) == set(BEHAVIOURS)
    same = clones.behaviour1 == clones.behaviour2
    assert (same == (clones.label == 1)).all()
    assert (clones.func1 != clones.func2).all()  # clones differ in form


def test_every_sample_parses_with_tree_sitter(vuln, clones, c_parser):
    codes = list(vuln.func) + list(clones.func1) + list(clones.func2)
    failures = {i: b for i, code in enumerate(codes) if (b := _bad_nodes(code, c_parser))}
    assert not failures, {i: (failures[i], codes[i]) for i in list(failures)[:2]}


def test_no_single_surface_token_predicts_the_label():
    df = generate_vulnerability(1000, seed=11)
    sets = [set(_TOKEN.findall(code)) for code in df.func]

    def best(frame_sets, y):
        vocab = set().union(*frame_sets)
        accs = {t: np.mean(np.array([t in s for s in frame_sets]) == y) for t in vocab}
        return max((max(a, 1 - a), t) for t, a in accs.items())

    y = df.target.to_numpy()
    overall = best(sets, y)
    assert overall[0] <= 0.65, overall
    for cwe, idx in df.groupby("cwe").groups.items():
        worst = best([sets[i] for i in idx], y[idx])
        assert worst[0] <= 0.87, (cwe, worst)


def _gcc(files, tmp_path, *extra):
    cmd = [
        "gcc",
        "-std=gnu11",
        "-Werror=implicit-function-declaration",
        "-Werror=return-type",
        "-Werror=int-conversion",
        "-Werror=incompatible-pointer-types",
        *extra,
        *map(str, files),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)


@needs_gcc
def test_generated_vulnerability_functions_are_real_c(vuln, tmp_path):
    sample = vuln.groupby(["cwe", "target"]).head(4)  # every class, both labels
    parts = [C_PRELUDE]
    for k, code in enumerate(sample.func):
        parts.append(_DEF.sub(lambda m, k=k: m.group(0).replace(m.group(1), f"f{k}"), code, count=1))
    src = tmp_path / "vuln.c"
    src.write_text("\n".join(parts))
    out = _gcc([src], tmp_path, "-fsyntax-only")
    assert out.returncode == 0, out.stderr[:3000]


_ARRAYS = [[], [5], [3, -1, 4, -1, 5, 9, -2, 6], [-7, -3, -9], [2, 4, 6, 8, 10, 0], [0, 0, 1, -12, 17]]
_INPUTS = {
    "array": [(f"(const int[]){{{', '.join(map(str, a or [0]))}}}", str(len(a))) for a in _ARRAYS],
    "scalar": [(str(n),) for n in range(-3, 13)],
    "pair": [(str(a), str(b)) for a in (-6, 0, 1, 7, 12) for b in (0, 1, 3, 7)],
    "string": [(f'"{s}"',) for s in ("", "Hello World 42", "aeiou XYZ 9", "  ", "MetaCompress 2025!")],
}


@pytest.mark.slow
@needs_gcc
def test_clones_behave_identically_and_non_clones_differ_when_run(clones, tmp_path):
    """Execution oracle: compile every pair of a sample and compare outputs on fixed inputs."""
    sample = clones.groupby(["behaviour1", "label"]).head(1)  # every behaviour, both labels
    files, calls, protos = [], [], []
    for k, row in enumerate(sample.itertuples()):
        for side, code, beh in (("a", row.func1, row.behaviour1), ("b", row.func2, row.behaviour2)):
            name = f"p{k}_{side}"
            *_, last = _DEF.finditer(code)  # the behaviour function follows any extracted helper
            code = code[: last.start(1)] + name + code[last.end(1) :]
            path = tmp_path / f"{name}.c"
            path.write_text("#include <ctype.h>\n#include <string.h>\n" + code)
            files.append(path)
            family = BEHAVIOURS[beh].family
            sig = {"array": "const int *, int", "scalar": "int", "pair": "int, int", "string": "const char *"}[family]
            protos.append(f"int {name}({sig});")
            calls += [f'printf("{k} {side} %d\\n", {name}({", ".join(args)}));' for args in _INPUTS[family]]
    main = tmp_path / "main.c"
    main.write_text(
        "#include <stdio.h>\n" + "\n".join(protos) + "\nint main(void) {\n" + "\n".join(calls) + "\nreturn 0;\n}\n"
    )
    out = _gcc([*files, main], tmp_path, "-O0", "-o", "pairs")
    assert out.returncode == 0, out.stderr[:3000]
    run = subprocess.run([str(tmp_path / "pairs")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    results: dict[tuple[int, str], list[str]] = {}
    for line in run.stdout.splitlines():
        k, side, value = line.split()
        results.setdefault((int(k), side), []).append(value)
    for k, row in enumerate(sample.itertuples()):
        same = results[(k, "a")] == results[(k, "b")]
        assert same == bool(row.label), (row.behaviour1, row.behaviour2, row.func1, row.func2)


def test_splits_are_disjoint_stratified_and_deterministic(vuln):
    parts = split_frame(vuln, (0.8, 0.1, 0.1), seed=1, stratify="target")
    assert [len(parts[s]) for s in ("train", "valid", "test")] == [480, 60, 60]
    assert set(Counter(parts["valid"].target).values()) == {30}
    ids = [set(parts[s].idx) for s in parts]
    assert set().union(*ids) == set(vuln.idx) and sum(map(len, ids)) == len(vuln)
    again = split_frame(vuln, (0.8, 0.1, 0.1), seed=1, stratify="target")
    assert all(parts[s].equals(again[s]) for s in parts)
    with pytest.raises(ValueError, match="summing to 1"):
        split_frame(vuln, (0.5, 0.1, 0.1))
    with pytest.raises(KeyError, match="stratify column 'label'"):
        split_frame(vuln, stratify="label")
    small = make_splits("clone", 30, seed=2)
    assert all(len(small[s]) > 0 for s in small) and sum(map(len, small.values())) == 30
    with pytest.raises(ValueError, match="unknown task"):
        make_splits("translation")


# identifiers are random, so the oracle reads them as one symbol; C keywords, the prelude's helpers and
# the library calls a flaw or fix is made of stay themselves
_KEPT = {
    "strcpy",
    "strncpy",
    "snprintf",
    "printf",
    "fprintf",
    "memcpy",
    "memset",
    "malloc",
    "calloc",
    "free",
    "strlen",
    "system",
    "strchr",
    "strpbrk",
    "isalnum",
    "isupper",
    "isdigit",
    "sizeof",
    "stderr",
    "size_t",
    "INT_MAX",
    "print_line",
    "print_int",
    "rand_value",
    "log_event",
    "checksum",
    "global_returns_true",
}


def _shape(code: str) -> list[str]:
    from mlflow_metacompress.data.generators.c_random import C_KEYWORDS

    return [
        t if not (t[0].isalpha() or t[0] == "_") or t in C_KEYWORDS or t in _KEPT else "ID"
        for t in _TOKEN.findall(code)
    ]


def _ngrams(code: str, n: int) -> list[str]:
    toks = _shape(code)
    return [" ".join(toks[i : i + k]) for k in range(1, n + 1) for i in range(len(toks) - k + 1)]


@pytest.mark.slow
def test_the_vulnerability_label_is_in_the_text_an_ngram_model_learns_it():
    """Learnability oracle: from 1,000 labelled rows (the labelled half of a 2,500-row training
    split; the quick teacher gets 2,400), a logistic regression on token 1-6-grams separates
    vulnerable from fixed functions on the test split, overall and in every CWE class. A
    teacher below that has a training problem, not a data one; a generator change that buries
    the flaw fails here."""
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from mlflow_metacompress.distill.datasets import split_halves

    splits = make_splits("vulnerability", 2500, seed=0)
    train, test = split_halves(splits["train"], 0)[0], splits["test"]
    vec = TfidfVectorizer(analyzer=lambda code: _ngrams(code, 6), sublinear_tf=True)
    model = LogisticRegression(C=100, max_iter=5000).fit(vec.fit_transform(train.func), train.target)
    right = model.predict(vec.transform(test.func)) == test.target.to_numpy()
    assert right.mean() >= 0.95, right.mean()
    per_cwe = test.assign(right=right).groupby("cwe").right.mean()
    assert per_cwe.min() >= 0.85, per_cwe.to_dict()


@pytest.mark.slow
def test_the_clone_label_is_in_the_text_a_pairwise_ngram_model_learns_it():
    """The same oracle for clone pairs: a logistic regression on the n-grams two functions
    share and the ones only one of them has (``a·b`` and ``|a−b|`` of binary 1-3-gram vectors)."""
    pytest.importorskip("sklearn")
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    from mlflow_metacompress.distill.datasets import split_halves

    splits = make_splits("clone", 2500, seed=0)
    train, test = split_halves(splits["train"], 0)[0], splits["test"]
    vec = CountVectorizer(analyzer=lambda code: _ngrams(code, 3), binary=True, min_df=2)
    vec.fit([*train.func1, *train.func2])

    def pairs(df):
        a, b = vec.transform(df.func1), vec.transform(df.func2)
        return hstack([a.multiply(b), abs(a - b)]).tocsr()

    model = LogisticRegression(C=10, max_iter=5000).fit(pairs(train), train.label)
    assert model.score(pairs(test), test.label) >= 0.9


@pytest.mark.slow
def test_large_generations_draw_no_bar_into_a_file(capsys):
    """Bars only on a terminal: captured stderr (a file, not a TTY) holds no progress bar."""
    generate_vulnerability(5000, seed=1)
    generate_clones(5000, seed=1)
    assert "generating" not in capsys.readouterr().err
