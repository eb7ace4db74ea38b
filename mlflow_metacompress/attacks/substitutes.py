"""Where new identifier names come from.

* :class:`IdentifierVocabulary` — natural identifiers mined from the evaluation data
  with the transformation library's identifier discovery. MHM (Zhang et al., AAAI
  2020) and WIR-Random (Zeng et al., ISSTA 2022) draw from it uniformly at random;
  ALERT (Yang et al., ICSE 2022) without a masked language model ranks it by
  similarity to the original name (:func:`name_similarity`: sub-token Jaccard plus
  character-trigram Dice), standing in for ALERT's embedding similarity.
* :class:`MLMSubstitutes` — ALERT's naturalness-aware substitutes from a masked
  language model (the teacher's own MLM or any local fill-mask model): every
  occurrence of the identifier is replaced by one mask token and the top
  predictions, averaged in log-probability over occurrences, that form valid
  identifiers are kept. ALERT additionally combines multi-sub-token predictions;
  here each substitute is one vocabulary token.
"""

from __future__ import annotations

import functools
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_name(name: str) -> list[str]:
    """Lower-cased sub-tokens of a camelCase / snake_case identifier."""
    return [p.lower() for p in _PARTS.findall(name)]


def _trigrams(name: str) -> frozenset[str]:
    s = f"^{name.lower()}$"
    return frozenset(s[i : i + 3] for i in range(max(len(s) - 2, 1)))


def name_similarity(a: str, b: str) -> float:
    """Similarity in [0, 1]: mean of sub-token Jaccard and character-trigram Dice."""
    pa, pb = set(split_name(a)), set(split_name(b))
    jac = len(pa & pb) / len(pa | pb) if pa | pb else 0.0
    ta, tb = _trigrams(a), _trigrams(b)
    dice = 2 * len(ta & tb) / (len(ta) + len(tb)) if ta or tb else 0.0
    return 0.5 * (jac + dice)


class IdentifierVocabulary:
    """Natural identifiers with their frequencies."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = Counter({k: v for k, v in counts.items() if IDENT.match(k)})
        # deterministic order: most frequent first, then alphabetical
        self.names = sorted(self.counts, key=lambda n: (-self.counts[n], n))
        self._nearest = functools.lru_cache(maxsize=4096)(self._rank)
        # inverted index: a name sharing no sub-token and no trigram has similarity 0
        self._index: dict[str, list[str]] = {}
        for n in self.names:
            for key in {f"p:{x}" for x in split_name(n)} | {f"t:{x}" for x in _trigrams(n)}:
                self._index.setdefault(key, []).append(n)

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def mine(cls, codes: Iterable[str], language: str, progress: bool = False) -> IdentifierVocabulary:
        """Count the renamable identifiers (variables, parameters) in ``codes``."""
        from tqdm.auto import tqdm

        from ..transforms import renamable_identifiers

        counts: Counter[str] = Counter()
        codes = list(codes)
        for code in tqdm(codes, desc="mining identifiers", disable=not progress, leave=False):
            try:
                counts.update(renamable_identifiers(code, language))
            except Exception as exc:  # one unparsable function must not stop mining
                logger.debug("identifier mining skipped a function: %s", exc)
        logger.info("mined %d distinct identifiers from %d functions", len(counts), len(codes))
        return cls(counts)

    def _rank(self, name: str, limit: int = 256) -> tuple[str, ...]:
        keys = {f"p:{x}" for x in split_name(name)} | {f"t:{x}" for x in _trigrams(name)}
        near = {n for k in keys for n in self._index.get(k, ())}
        ranked = sorted(near, key=lambda n: (-name_similarity(name, n), -self.counts[n], n))[:limit]
        if len(ranked) < limit:  # the rest all score 0: most frequent first, as in the full sort
            ranked += [n for n in self.names if n not in near][: limit - len(ranked)]
        return tuple(ranked)

    def nearest(self, name: str, k: int, exclude: Iterable[str] = ()) -> list[str]:
        """Up to ``k`` names most similar to ``name`` (``name`` and ``exclude`` left out)."""
        ex = set(exclude) | {name}
        return [n for n in self._nearest(name) if n not in ex][:k]

    def sample(self, rng: random.Random, n: int, exclude: Iterable[str] = ()) -> list[str]:
        """``n`` distinct names drawn uniformly; padded with sub-token blends when the
        vocabulary is too small."""
        ex = set(exclude)
        pool = [x for x in self.names if x not in ex]
        out = rng.sample(pool, min(n, len(pool)))
        parts = sorted({p for x in self.names for p in split_name(x) if p.isalpha()}) or ["value", "item", "tmp"]
        tries = 0
        while len(out) < n and tries < 20 * n:
            tries += 1
            blend = f"{rng.choice(parts)}_{rng.choice(parts)}"
            if blend not in ex and blend not in out:
                out.append(blend)
        return out


class MLMSubstitutes:
    """Substitutes predicted by a masked language model (ALERT's naturalness)."""

    def __init__(self, model: Any, tokenizer: Any, max_length: int = 512) -> None:
        if getattr(tokenizer, "mask_token", None) is None:
            raise ValueError("the MLM tokenizer has no mask token")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.description = type(model).__name__

    @classmethod
    def from_pretrained(cls, path: str | Path, max_length: int = 512) -> MLMSubstitutes:
        """Load a local fill-mask model directory (``AutoModelForMaskedLM``)."""
        from .._optional import require

        require("torch", "masked-language-model substitutes")
        require("transformers", "masked-language-model substitutes")
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        if not Path(path).exists():
            raise FileNotFoundError(f"masked language model directory {path} does not exist")
        sub = cls(AutoModelForMaskedLM.from_pretrained(path), AutoTokenizer.from_pretrained(path), max_length)
        sub.description = str(path)
        return sub

    def substitutes(self, code: str, name: str, language: str, k: int = 30) -> list[str]:
        """Up to ``2k`` identifier candidates for ``name`` in ``code``, best first."""
        import torch

        from ..transforms import rename_identifiers

        marker = "zzmaskedidentifierzz"
        while marker in code:
            marker += "z"
        text = rename_identifiers(code, language, {name: marker}).replace(marker, self.tokenizer.mask_token)
        enc = self.tokenizer(text, truncation=True, max_length=self.max_length, return_tensors="pt")
        positions = (enc["input_ids"][0] == self.tokenizer.mask_token_id).nonzero().flatten()
        if len(positions) == 0:
            return []
        with torch.no_grad():
            logits = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits[0]
        scores = torch.log_softmax(logits[positions].float(), dim=-1).mean(dim=0)
        top = torch.topk(scores, min(scores.numel(), 10 * k)).indices.tolist()
        out: list[str] = []
        for tok_id in top:
            word = self.tokenizer.decode([tok_id]).strip()
            if IDENT.match(word) and word != name and word not in out:
                out.append(word)
            if len(out) >= 2 * k:
                break
        return out
