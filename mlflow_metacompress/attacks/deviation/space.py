"""The transformation over the whole space: the rewrites of ``mlflow_metacompress.transforms``
composed with identifier renames, every candidate re-parsed and checked.

The operators are every registered semantics-preserving rewrite of the language (NatGen,
Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021) except
``compose`` — the searches compose operators themselves — plus :data:`RENAME`, which renames
one identifier chosen by the search's random generator (the *site*) to a natural identifier
(as MHM, Zhang et al., AAAI 2020, draws them). The rewrites choose their own sites from a
seed, which the search draws. A candidate is kept only when it differs from its parent and
passes the checks the transformations run on their own output (:func:`valid_variant`: a
clean tree-sitter re-parse, and ``compile()`` for Python); a failing candidate is dropped
before any query and counted in :attr:`VariantSpace.rejected`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from ..substitutes import IdentifierVocabulary

logger = logging.getLogger(__name__)

RENAME = "rename_identifier"
"""The operator that renames one identifier at a site the search chooses."""


def default_operators(language: str) -> list[str]:
    """Every rewrite for ``language`` but ``compose``, then :data:`RENAME`."""
    from ...transforms import list_transforms

    return [n for n in list_transforms(language) if n != "compose"] + [RENAME]


def valid_variant(code: str, language: str) -> bool:
    """The transformations' own output checks: re-parses cleanly; Python also compiles."""
    from ...transforms._checks import compiles, parses_cleanly

    return parses_cleanly(code, language) and (language != "python" or compiles(code))


class VariantSpace:
    """Operators over one program; :meth:`apply` returns a checked variant or None."""

    def __init__(
        self,
        code: str,
        language: str,
        vocabulary: IdentifierVocabulary,
        operators: Sequence[str] | None = None,
    ) -> None:
        self.original = code
        self.language = language
        self.vocabulary = vocabulary
        self.operators = list(operators) if operators is not None else default_operators(language)
        known = default_operators(language)
        unknown = [o for o in self.operators if o not in known]
        if unknown or not self.operators:
            raise ValueError(f"unknown or no operators {unknown or self.operators}; known for {language}: {known}")
        self.rejected = 0

    def apply(self, code: str, operator: str, rng: random.Random) -> str | None:
        """``operator`` applied to ``code`` with a seed (or rename site) drawn from ``rng``;
        None when it does not apply or its output fails :func:`valid_variant`."""
        from ...transforms import TransformError, transform

        seed = rng.randrange(2**31)
        try:
            if operator == RENAME:
                out = self._rename(code, random.Random(seed))
            else:
                result = transform(code, operator, self.language, seed=seed)
                out = result.code if result.changed else None
        except TransformError as exc:
            logger.debug("%s refused: %s", operator, exc)
            out = None
        if out is None or out == code:
            return None
        if not valid_variant(out, self.language):
            self.rejected += 1
            return None
        return out

    def _rename(self, code: str, rng: random.Random) -> str | None:
        from ...transforms import all_identifiers, is_valid_identifier, renamable_identifiers, rename_identifiers

        names = list(dict.fromkeys(renamable_identifiers(code, self.language)))
        if not names:
            return None
        old = rng.choice(names)
        taken = all_identifiers(code, self.language)
        for new in self.vocabulary.sample(rng, 8, exclude=taken):
            if is_valid_identifier(new, self.language):
                return rename_identifiers(code, self.language, {old: new})
        return None

    def compose(self, code: str, operators: Sequence[str], rng: random.Random) -> tuple[str, list[str]]:
        """Apply ``operators`` in order, skipping those that do not apply; (code, applied)."""
        applied: list[str] = []
        for op in operators:
            out = self.apply(code, op, rng)
            if out is not None:
                code, applied = out, [*applied, op]
        return code, applied
