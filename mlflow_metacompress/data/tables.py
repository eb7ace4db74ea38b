"""The one reader of evaluation tables for every command line: ``.jsonl``/``.ndjson``
(one JSON object per line), ``.json`` (a JSON array of objects, a ``{column: values}``
object, or JSON lines), ``.csv`` and ``.parquet``/``.pq``.

Every failure names the file: a missing file or a directory, an unsupported suffix, a
malformed JSON line (with its line number), text that is not UTF-8 (with the line of the
first bad byte), or a file the CSV/Parquet parser rejects. Format errors are
:class:`~.codexglue.DataFormatError` (a ``ValueError``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from .codexglue import DataFormatError, json_objects

JSON_LINES = (".jsonl", ".ndjson")
SUFFIXES = (*JSON_LINES, ".json", ".csv", ".parquet", ".pq")


def _check_file(path: Path) -> str:
    if path.is_dir():
        raise IsADirectoryError(f"data file {path} is a directory, not a table file")
    if not path.exists():
        raise FileNotFoundError(f"data file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DataFormatError(
            f"{path}: unsupported data format {suffix or '(no suffix)'!r}; use one of {', '.join(SUFFIXES)}"
        )
    return suffix


def _text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None


def _json_lines(path: Path, text: str) -> pd.DataFrame:
    rows = [row for _, row in json_objects(path, text.splitlines())]
    if not rows:
        raise DataFormatError(f"{path}: no rows (the file is empty)")
    return pd.DataFrame.from_records(rows)


def _json(path: Path, text: str) -> pd.DataFrame:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one object per line in a .json file
            return _json_lines(path, text)
        raise DataFormatError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if isinstance(doc, list) and all(isinstance(r, dict) for r in doc):
        frame = pd.DataFrame.from_records(doc)
    elif isinstance(doc, dict) and all(isinstance(v, (list, dict)) for v in doc.values()):
        frame = pd.DataFrame(doc)
    else:
        raise DataFormatError(
            f"{path}: expected a JSON array of objects or a {{column: values}} object, got {type(doc).__name__}"
        )
    if frame.empty:
        raise DataFormatError(f"{path}: no rows")
    return frame


def _csv(path: Path, text: str) -> pd.DataFrame:
    try:
        return pd.read_csv(io.StringIO(text))
    except pd.errors.EmptyDataError:
        raise DataFormatError(f"{path}: no rows (the file is empty)") from None
    except pd.errors.ParserError as exc:
        raise DataFormatError(f"{path}: malformed CSV ({str(exc).strip()})") from None


def _parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataFormatError(f"{path}: not a readable Parquet file ({exc})") from None


def read_table(path: str | Path) -> pd.DataFrame:
    """Read an evaluation table (``.jsonl``, ``.json``, ``.csv`` or ``.parquet``) into a DataFrame."""
    path = Path(path)
    suffix = _check_file(path)
    if suffix in (".parquet", ".pq"):
        return _parquet(path)
    text = _text(path)
    if suffix in JSON_LINES:
        return _json_lines(path, text)
    if suffix == ".json":
        return _json(path, text)
    return _csv(path, text)


__all__ = ["SUFFIXES", "read_table"]
