"""``read_table``: the one evaluation-table reader of the command lines. Contents are
checked against the rows written, errors against the file and line at fault."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mlflow_metacompress.data.codexglue import DataFormatError
from mlflow_metacompress.data.tables import read_table

ROWS = [
    {"func": "int f(int a) { return a; }", "target": 1},
    {"func": "void g(void) {\n  /* é, ü */\n}", "target": 0},
    {"func": 'char *s = "a,b\\"c";', "target": 1},
]
EXPECTED = pd.DataFrame(ROWS)


def _check(df: pd.DataFrame) -> None:
    assert list(df.columns) == ["func", "target"]
    assert df["func"].tolist() == EXPECTED["func"].tolist()
    assert [int(v) for v in df["target"]] == EXPECTED["target"].tolist()


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson", ".JSONL"])
def test_json_lines(tmp_path, suffix):
    path = tmp_path / f"d{suffix}"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n\n", encoding="utf-8")  # a trailing blank line
    _check(read_table(path))


@pytest.mark.parametrize("doc", [ROWS, {"func": [r["func"] for r in ROWS], "target": [r["target"] for r in ROWS]}])
def test_json_documents_and_json_lines_in_a_json_file(tmp_path, doc):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _check(read_table(path))
    path.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    _check(read_table(str(path)))


def test_csv_and_parquet_round_trip(tmp_path):
    EXPECTED.to_csv(tmp_path / "d.csv", index=False)
    _check(read_table(tmp_path / "d.csv"))
    EXPECTED.to_parquet(tmp_path / "d.parquet")
    _check(read_table(tmp_path / "d.parquet"))
    EXPECTED.to_parquet(tmp_path / "d.pq")
    _check(read_table(tmp_path / "d.pq"))


def test_missing_directory_and_unsupported_suffix(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"data file {tmp_path / 'none.jsonl'} does not exist"):
        read_table(tmp_path / "none.jsonl")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        read_table(tmp_path)
    (tmp_path / "d.xlsx").write_text("x")
    with pytest.raises(DataFormatError, match=r"d\.xlsx: unsupported data format '\.xlsx'; use one of .*\.jsonl"):
        read_table(tmp_path / "d.xlsx")
    (tmp_path / "noext").write_text("x")
    with pytest.raises(DataFormatError, match="no suffix"):
        read_table(tmp_path / "noext")


def test_malformed_json_lines_name_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n" + '{"func": "x", "target": }\n')
    with pytest.raises(DataFormatError, match=rf"{path}:3: invalid JSON \(Expecting value at column 25\)"):
        read_table(path)
    path.write_text(json.dumps(ROWS[0]) + "\n[1, 2]\n")
    with pytest.raises(DataFormatError, match=rf"{path}:2: expected a JSON object per line, got list"):
        read_table(path)
    path.write_text("\n\n")
    with pytest.raises(DataFormatError, match="no rows"):
        read_table(path)
    json_path = tmp_path / "d.json"
    json_path.write_text('[{"func": "x"},\n {"func": }]')
    with pytest.raises(DataFormatError, match=rf"{json_path}:2: invalid JSON"):
        read_table(json_path)
    json_path.write_text('"just a string"')
    with pytest.raises(DataFormatError, match="expected a JSON array of objects"):
        read_table(json_path)


def test_non_utf8_text_names_the_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"func,target\nint a;,1\nchar \xe9;,0\n")
    with pytest.raises(DataFormatError, match=rf"{path}:3: not UTF-8 text \(byte 0xe9 at offset 26\)"):
        read_table(path)
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"func": "\xff"}\n')
    with pytest.raises(DataFormatError, match=rf"{path}:1: not UTF-8"):
        read_table(path)


def test_broken_csv_and_parquet(tmp_path):
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(DataFormatError, match="e.csv: no rows"):
        read_table(tmp_path / "e.csv")
    (tmp_path / "b.csv").write_text('func,target\n"unterminated,1\n')
    with pytest.raises(DataFormatError, match="b.csv: malformed CSV"):
        read_table(tmp_path / "b.csv")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataFormatError, match="b.parquet: not a readable Parquet file"):
        read_table(tmp_path / "b.parquet")
