"""Plain helpers shared by the test modules (issue 45): builders of tiny models, so that no
test module imports another. Fixtures built on them live in ``conftest.py``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def tiny_roberta_config(
    vocab_size: int,
    pad_token_id: int,
    *,
    labels: Sequence[str] | None = None,
    positions: int = 130,
    hidden: int = 32,
    **overrides: Any,
) -> Any:
    """A one-layer RoBERTa configuration (``hidden`` wide, 2 heads, FFN ``2 * hidden``,
    ``positions`` position embeddings); with ``labels``, their ``id2label``/``label2id``."""
    from transformers import RobertaConfig

    names: dict[str, Any] = {}
    if labels is not None:
        names = {"id2label": dict(enumerate(labels)), "label2id": {k: i for i, k in enumerate(labels)}}
    return RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=positions,
        pad_token_id=pad_token_id,
        **names,
        **overrides,
    )


def tiny_sequence_classifiers(
    tok: Any,
    labels: Sequence[str],
    *,
    seeds: Sequence[int] = (0, 1),
    positions: int = 130,
    centred_on: list[str] | None = None,
) -> list[Any]:
    """One tiny ``RobertaForSequenceClassification`` per seed (``initializer_range=0.5``, so
    that seeds disagree), in eval mode; with ``centred_on``, the classifier's bias is shifted
    so that the mean logit over those texts is zero (both labels predicted)."""
    import torch
    from transformers import RobertaForSequenceClassification

    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        cfg = tiny_roberta_config(len(tok), tok.pad_token_id, labels=labels, positions=positions, initializer_range=0.5)
        model = RobertaForSequenceClassification(cfg).eval()
        if centred_on is not None:
            with torch.no_grad():
                logits = model(**tok(centred_on, padding=True, return_tensors="pt")).logits
                model.classifier.out_proj.bias -= logits.mean(dim=0)
        models.append(model)
    return models


# --------------------------------------------------------------------------- attack inputs

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
