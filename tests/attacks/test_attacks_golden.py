"""Golden outcomes of every shipped recipe on fixed seeds (issue 43): the recipes were
recorded before they were recomposed into goal · constraints · transformation · search,
and must keep producing exactly the same adversarial code, query counts and statuses.

Regenerate (only when a behaviour change is intended) with
``METACOMPRESS_REGEN_GOLDEN=1 pytest tests/attacks/test_attacks_golden.py``.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from mlflow_metacompress.attacks import run_attack

GOLDEN = Path(__file__).parents[1] / "golden" / "attack_recipes.json"
RECIPES = ["alert_yang_2022", "coda_tian_2023", "mhm_zhang_2020", "wir_random_zeng_2022"]

C_CODES = [
    "int sum_items(int *items, int count) {\n  int total = 0;\n  for (int i = 0; i < count; i++) {\n"
    "    total += items[i];\n  }\n  return total;\n}\n",
    "void clear_buffer(char *buffer, int count) {\n  int pos = 0;\n  while (pos < count) {\n"
    "    buffer[pos] = 0;\n    pos++;\n  }\n}\n",
    "int parity(unsigned int word) {\n  int bits = 0;\n  while (word) {\n    bits = bits ^ (word & 1);\n"
    "    word = word >> 1;\n  }\n  return bits;\n}\n",
    "int mean(int *samples, int n) {\n  int acc = 0;\n  int m = 0;\n  while (m < n) {\n"
    "    acc = acc + samples[m];\n    m = m + 1;\n  }\n  return acc / n;\n}\n",
]
JAVA_CODES = [
    "int countEven(int[] values) {\n  int count = 0;\n  for (int i = 0; i < values.length; i++) {\n"
    "    if (values[i] % 2 == 0) { count += 1; } else { count += 0; }\n  }\n  return count;\n}\n",
    "String repeat(String text, int times) {\n  StringBuilder out = new StringBuilder();\n  int k = 0;\n"
    "  while (k < times) {\n    out.append(text);\n    k++;\n  }\n  return out.toString();\n}\n",
    "boolean hasZero(int[] nums) {\n  int index = 0;\n  while (index < nums.length) {\n"
    "    if (nums[index] == 0) return true;\n    index = index + 1;\n  }\n  return false;\n}\n",
    "int maxOf(int[] data) {\n  int best = data[0];\n  for (int j = 1; j < data.length; j++) {\n"
    "    if (data[j] > best) best = data[j];\n  }\n  return best;\n}\n",
]
LABELS = [1, 1, 1, 0]  # the third row of each language is held by a keyword: no flip


def tiny_model(df: pd.DataFrame) -> np.ndarray:
    """Deterministic 2-class model: a token-hash linear score, a bonus for ``count`` and a
    large one for the keywords ``unsigned``/``boolean`` (no renaming removes those)."""
    out = []
    for code in df[df.columns[0]]:
        tokens = re.findall(r"[A-Za-z_]\w*", code)
        score = 0.3 * sum((zlib.crc32(t.encode()) % 1000) / 1000 - 0.5 for t in tokens) / max(len(tokens), 1) ** 0.5
        score += 0.6 if re.search(r"\bcount\b", code) else -0.6
        score += 3.0 if re.search(r"\b(unsigned|boolean)\b", code) else 0.0
        p = 1 / (1 + np.exp(-2 * score))
        out.append([1 - p, p])
    return np.asarray(out)


def outcomes() -> dict[str, list[dict]]:
    record: dict[str, list[dict]] = {}
    for language, codes in (("c", C_CODES), ("java", JAVA_CODES)):
        frame = pd.DataFrame({"func": codes})
        for name in RECIPES:
            report = run_attack(name, tiny_model, frame, ["func"], LABELS, language, budget=60, seed=1, progress=False)
            record[f"{name}/{language}"] = [
                {
                    "status": r.status.value,
                    "queries": r.queries,
                    "adversarial_code": r.adversarial_code,
                    "renaming": r.renaming,
                    "transformations": r.transformations,
                }
                for r in report.results
            ]
    return record


def test_recipes_reproduce_their_recorded_outcomes():
    got = outcomes()
    if os.environ.get("METACOMPRESS_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert got[key] == expected[key], key
    statuses = {r["status"] for rows in expected.values() for r in rows}
    assert {"succeeded", "failed", "skipped"} <= statuses  # the recording covers every path
