"""CodeXGLUE loaders: good files, every malformed-line error with file:line, and the real
shared subsets when ../shared/data is present."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mlflow_metacompress.data import DataFormatError, get_task, load_bigclonebench, load_devign, load_task


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


DEVIGN_ROWS = [
    {"project": "qemu", "commit_id": "abc", "target": 1, "func": "int f(){return 0;}", "idx": 0},
    {"project": "FFmpeg", "commit_id": None, "target": 0, "func": "void g(int x){x++;}", "idx": 1},
    {"project": "qemu", "commit_id": "def", "target": True, "func": "int h(){}", "idx": 2},
]


def test_devign_good_file(tmp_path):
    path = write_jsonl(tmp_path / "train.jsonl", DEVIGN_ROWS[:2] + [""] + DEVIGN_ROWS[2:])  # blank line skipped
    df = load_devign(tmp_path, "train")
    assert list(df["func"]) == [r["func"] for r in DEVIGN_ROWS]
    assert list(df["target"]) == [1, 0, 1] and df["target"].dtype == "int64"
    assert list(df["idx"]) == [0, 1, 2] and df["commit_id"].isna().tolist() == [False, True, False]
    pd.testing.assert_frame_equal(load_devign(path), df)


@pytest.mark.parametrize(
    "bad, message",
    [
        ('{"func": "int f(){}", "target": 0', "invalid JSON"),
        ({"func": "int f(){}"}, "missing key(s) ['target']"),
        ({"target": 1}, "missing key(s) ['func']"),
        ({"func": "x", "target": 2}, "target must be 0 or 1, got 2"),
        ({"func": "x", "target": "yes"}, "target must be 0 or 1"),
        ({"func": 12, "target": 0}, "func must be a string"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_devign_malformed_line_names_file_and_line(tmp_path, bad, message):
    path = write_jsonl(tmp_path / "valid.jsonl", [DEVIGN_ROWS[0], "", bad, DEVIGN_ROWS[1]])
    with pytest.raises(DataFormatError) as err:
        load_devign(path)
    assert f"{path}:3:" in str(err.value)
    assert message in str(err.value)


def make_bcb(tmp_path, pairs, sep="\t"):
    write_jsonl(tmp_path / "data.jsonl", [{"func": f"void m{i}() {{}}", "idx": str(i)} for i in range(1, 5)])
    (tmp_path / "train.txt").write_text("".join(sep.join(map(str, p)) + "\n" for p in pairs))
    return tmp_path


@pytest.mark.parametrize("sep", ["\t", " ", "  \t "])
def test_bigclonebench_good_pairs_any_whitespace(tmp_path, sep):
    make_bcb(tmp_path, [(1, 2, 1), (3, 4, 0), (4, 1, 0)], sep)
    df = load_bigclonebench(tmp_path, "train")
    assert list(df.columns[:3]) == ["func1", "func2", "label"]
    assert df["func1"].tolist() == ["void m1() {}", "void m3() {}", "void m4() {}"]
    assert df["func2"].tolist() == ["void m2() {}", "void m4() {}", "void m1() {}"]
    assert df["label"].tolist() == [1, 0, 0] and df["label"].dtype == "int64"


@pytest.mark.parametrize(
    "pairs, message",
    [
        ([(1, 2, 1), (1, 9, 0)], "function id '9' is not in data.jsonl"),
        ([(1, 2, 1), (1, 2, 3)], "label must be 0 or 1, got '3'"),
        ([(1, 2, 1), (1, 2)], "expected 'idx1 idx2 label', got 2 field(s)"),
    ],
)
def test_bigclonebench_bad_pair_line(tmp_path, pairs, message):
    make_bcb(tmp_path, pairs)
    with pytest.raises(DataFormatError) as err:
        load_bigclonebench(tmp_path, "train")
    assert f"{tmp_path / 'train.txt'}:2:" in str(err.value) and message in str(err.value)


def test_bigclonebench_bad_function_file(tmp_path):
    write_jsonl(tmp_path / "data.jsonl", [{"func": "a", "idx": "1"}, {"func": "b"}])
    (tmp_path / "train.txt").write_text("1\t1\t1\n")
    with pytest.raises(DataFormatError, match=r"data\.jsonl:2: missing key\(s\) \['idx'\]"):
        load_bigclonebench(tmp_path, "train")
    write_jsonl(tmp_path / "data.jsonl", [{"func": "a", "idx": "1"}, {"func": "b", "idx": 1}])
    with pytest.raises(DataFormatError, match=r"data\.jsonl:2: duplicate idx '1'"):
        load_bigclonebench(tmp_path, "train")


def test_missing_file_and_unknown_task(tmp_path):
    with pytest.raises(FileNotFoundError, match="test.jsonl"):
        load_devign(tmp_path, "test")
    with pytest.raises(ValueError, match="split="):
        load_devign(tmp_path)
    with pytest.raises(ValueError, match="unknown task 'poj'"):
        get_task("poj")


@pytest.mark.slow
@pytest.mark.shared_data
def test_real_shared_subsets(shared_data):
    sizes = {"train": 2000, "valid": 500, "test": 1000}
    for split, n in sizes.items():
        df = load_task("devign", split, shared_data)
        assert len(df) == n and set(df["target"].unique()) == {0, 1}
        assert df["func"].map(len).min() > 0
    assert load_task("devign", "train", shared_data / "devign")["target"].sum() == 916  # README: 1,084 / 916
    pairs = {"train": (4000, 1974), "valid": (1000, 500), "test": (2000, 1000)}
    for split, (n, clones) in pairs.items():
        df = load_task("bigclonebench", split, shared_data)
        assert len(df) == n and int(df["label"].sum()) == clones
        assert df[["func1", "func2"]].map(lambda s: isinstance(s, str) and len(s) > 0).all().all()
