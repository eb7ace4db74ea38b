"""Attack inputs and oracles: C functions with and without a ``count`` variable, a model
sensitive to that name, tree-sitter leaves and a renaming check, identifier-sensitive models."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pandas as pd

WITH_COUNT = [
    "int sum_items(int *items, int count) {\n  int total = 0;\n  for (int i = 0; i < count; i++) {\n"
    "    total += items[i];\n  }\n  return total;\n}\n",
    "int max_value(const int *data, int count) {\n  int best = data[0];\n  int k;\n"
    "  for (k = 1; k < count; k++) {\n    if (data[k] > best) best = data[k];\n  }\n  return best;\n}\n",
    "void clear_buffer(char *buffer, int count) {\n  int pos = 0;\n  while (pos < count) {\n"
    "    buffer[pos] = 0;\n    pos++;\n  }\n}\n",
    "int count_zeros(const int *values, int length) {\n  int count = 0;\n  int j;\n"
    "  for (j = 0; j < length; j++) {\n    if (values[j] == 0) count += 1;\n  }\n  return count;\n}\n",
    "static int scale_all(int *arr, int count, int factor) {\n  int idx;\n"
    "  for (idx = 0; idx < count; ++idx) {\n    arr[idx] *= factor; /* in place */\n  }\n  return count;\n}\n",
    "int first_negative(int *nums, int count) {\n  int index = 0;\n  while (index < count) {\n"
    "    if (nums[index] < 0) {\n      return index;\n    }\n    index += 1;\n  }\n  return -1;\n}\n",
]


WITHOUT = [
    "int mean(int *samples, int n) {\n  int acc = 0;\n  int m = 0;\n  while (m < n) {\n"
    "    acc = acc + samples[m];\n    m = m + 1;\n  }\n  return acc / n;\n}\n",
    "int find(int *table, int size, int key) {\n  int lo = 0, hi = size - 1;\n  while (lo <= hi) {\n"
    "    int mid = (lo + hi) / 2;\n    if (table[mid] == key) return mid;\n    if (table[mid] < key) lo = mid + 1;\n"
    "    else hi = mid - 1;\n  }\n  return -1;\n}\n",
    "void copy_bytes(char *dst, const char *src, int len) {\n  int offset = 0;\n  while (offset < len) {\n"
    "    dst[offset] = src[offset];\n    offset = offset + 1;\n  }\n}\n",
    "int parity(unsigned int word) {\n  int bits = 0;\n  while (word) {\n    bits = bits ^ (word & 1);\n"
    "    word = word >> 1;\n  }\n  return bits;\n}\n",
]


CODES = WITH_COUNT + WITHOUT


LABELS = np.array([1] * len(WITH_COUNT) + [0] * len(WITHOUT))


def name_sensitive(df: pd.DataFrame) -> np.ndarray:
    """p(class 1) is high exactly when a variable named ``count`` appears."""
    p = np.array([0.85 if re.search(r"\bcount\b", c) else 0.15 for c in df[df.columns[0]]])
    return np.stack([1 - p, p], axis=1)


def leaves(code: str) -> list[tuple[str, str]]:
    """(type, text) of every tree-sitter leaf; asserts a clean parse."""
    import tree_sitter as ts
    import tree_sitter_c

    tree = ts.Parser(ts.Language(tree_sitter_c.language())).parse(code.encode())
    assert not tree.root_node.has_error, f"adversarial code does not parse:\n{code}"
    out, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.child_count == 0:
            out.append((node.type, node.text.decode()))
        stack.extend(reversed(node.children))
    return out


def assert_consistent_renaming(original: str, adversarial: str, renaming: dict[str, str]) -> None:
    a, b = leaves(original), leaves(adversarial)
    assert len(a) == len(b), "renaming changed the number of tokens"
    seen: dict[str, str] = {}
    for (ta, xa), (tb, xb) in zip(a, b, strict=True):
        assert ta == tb, f"token kinds differ: {ta} vs {tb}"
        if xa != xb:
            assert "identifier" in ta, f"non-identifier token changed: {xa!r} -> {xb!r}"
        if "identifier" in ta:
            assert seen.setdefault(xa, xb) == xb, f"{xa} renamed inconsistently"
    changed = {k: v for k, v in seen.items() if k != v}
    assert changed == renaming
    assert len(set(seen.values())) == len(seen), "two identifiers merged into one name"


def crc_score(code: str, salt: int) -> float:
    return (zlib.crc32(f"{salt}:{code}".encode()) % 1000) / 1000


def identifier_student(frame):  # sensitive to every identifier spelling
    p1 = np.array([0.05 + 0.9 * crc_score(c, 1) for c in frame["func"]])
    return np.stack([1 - p1, p1], axis=1)


def length_bucket_teacher(frame):  # depends on the code only through its length bucket: fewer flips
    p1 = np.array([0.1 + 0.8 * ((len(c) // 40) % 2) for c in frame["func"]])
    return np.stack([1 - p1, p1], axis=1)
