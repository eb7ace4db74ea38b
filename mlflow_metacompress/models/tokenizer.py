"""Tokenizers trained on task code with the ``tokenizers`` library, fully offline.

Compressor (Shi et al., ASE 2022) trains a byte-level BPE tokenizer on the task data and
searches its vocabulary size; AVATAR (Shi et al., ICSE-SEIS 2024) additionally searches
the tokenizer type (BPE, WordPiece, Unigram). All three are built here and wrapped as a
``transformers.PreTrainedTokenizerFast`` with RoBERTa-style special tokens, so the
result can be saved with ``save_pretrained`` and reloaded without network access.

**The same corpus gives the same tokenizer.** The ``tokenizers`` library's WordPiece and
Unigram trainers are not deterministic: WordPiece assigns the ids of its ``##``
continuation pieces in hash-map order, and those ids break ties between merges of equal
count, so two trainings on one corpus can learn different vocabularies; Unigram learns
the same pieces with scores and ids that move between trainings (huggingface/tokenizers
issue 1794, fix proposed in pull request 2066). A student of the same seed would then
differ from run to run (the tiny pipeline's MORPH student: 15,893 against 20,658
parameters). Every trained tokenizer is therefore kept in the project cache
(:func:`mlflow_metacompress.cache.location`, folder ``tokenizers/``), keyed on the
``tokenizers`` version, the kind, the vocabulary size, the minimum frequency and the
SHA-256 of the corpus: the first training on a machine fixes it, and every later run
reuses it (and skips the training). ``use_cache=False`` trains afresh.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

TokenizerType = Literal["bpe", "wordpiece", "unigram"]
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
CACHE_FOLDER = "tokenizers"
logger = logging.getLogger(__name__)


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 2000,
    kind: TokenizerType = "bpe",
    min_frequency: int = 2,
    model_max_length: int = 512,
    *,
    use_cache: bool = True,
    cache_dir: Any = None,
) -> PreTrainedTokenizerFast:
    """Train a tokenizer of ``kind`` on ``texts`` and wrap it for ``transformers``.

    ``bpe`` is byte-level BPE (RoBERTa/CodeBERT's scheme). Every kind gets the same
    special tokens and a ``<s> X </s>`` / ``<s> A </s></s> B </s>`` post-processor.
    The trained tokenizer is cached (module docstring) unless ``use_cache`` is false.
    """
    from .._optional import require

    require("tokenizers", "training a tokenizer")
    require("transformers", "training a tokenizer")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    texts = list(texts)
    if not texts:
        raise ValueError("train_tokenizer needs at least one text")
    if kind == "bpe":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer: trainers.Trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    elif kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="<unk>"))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS, show_progress=False
        )
    elif kind == "unigram":
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, unk_token="<unk>", show_progress=False
        )
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}; expected 'bpe', 'wordpiece' or 'unigram'")
    path = _cache_path(texts, kind, vocab_size, min_frequency, cache_dir) if use_cache else None
    cached = _load(path) if path is not None else None
    if cached is not None:
        tok = cached
    else:
        tok.train_from_iterator(texts, trainer=trainer)
        if path is not None:
            _store(path, tok)
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=model_max_length,
    )


def _cache_path(texts: list[str], kind: str, vocab_size: int, min_frequency: int, cache_dir: Any) -> Path:
    """Where the tokenizer trained with these settings on ``texts`` is kept."""
    import tokenizers

    from ..cache import location
    from ..cache_keys import texts_digest

    corpus = texts_digest([("texts", texts)])
    text = "|".join(map(str, ("tokenizer-v1", tokenizers.__version__, kind, vocab_size, min_frequency, corpus)))
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    return location(cache_dir) / CACHE_FOLDER / f"{kind}-{vocab_size}-{key}.json"


def _load(path: Path) -> Any:
    """The cached ``tokenizers.Tokenizer`` at ``path``, or None (absent or unreadable)."""
    from tokenizers import Tokenizer

    if not path.is_file():
        return None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # a damaged entry is retrained, not fatal
        logger.warning("discarding unreadable cached tokenizer %s: %s", path, exc)
        return None
    logger.debug("tokenizer: cache hit %s", path)
    return tok


def _store(path: Path, tok: Any) -> None:
    """Atomic write (temporary file + ``os.replace``); a read-only cache only logs."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tok.save(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("could not cache the tokenizer at %s: %s", path, exc)
