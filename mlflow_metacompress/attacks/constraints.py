"""Constraints on identifier renamings, the filters every candidate passes.

The constraints of identifier-substitution attacks on code models (MHM, Zhang et al.,
AAAI 2020; ALERT, Yang et al., ICSE 2022): the new name is a valid identifier of the
language and not a keyword; it collides with no identifier already in the program
(checked against *every* identifier of the function, which is stricter than a scope
check and therefore always safe); two names are never renamed to the same name; and
at most ``max_changed`` identifiers change. Consistency — every occurrence of a name
renamed together — is guaranteed by the transformation library's renamer, which the
attacks use exclusively.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


def _valid(name: str, language: str) -> bool:
    from ..transforms import is_valid_identifier

    return bool(is_valid_identifier(name, language))


@dataclass
class RenameConstraints:
    """Constraints for renaming identifiers of one program.

    ``taken`` holds every identifier in the program (original names included);
    ``validator`` overrides the language's identifier check (default: the
    transformation library's ``is_valid_identifier``).
    """

    language: str
    taken: frozenset[str]
    renamable: frozenset[str]
    max_changed: int | None = None
    validator: Callable[[str], bool] | None = None
    _valid_cache: dict[str, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def for_code(
        cls, code: Any, language: str, renamable: Iterable[str], max_changed: int | None = None
    ) -> RenameConstraints:
        """Constraints for ``code`` (a string, or a parsed ``transforms.Source`` to skip re-parsing)."""
        from ..transforms import all_identifiers

        return cls(language, frozenset(all_identifiers(code, language)), frozenset(renamable), max_changed)

    def valid_name(self, name: str) -> bool:
        """A valid, non-keyword identifier of the language (cached)."""
        if name not in self._valid_cache:
            ok = self.validator(name) if self.validator is not None else _valid(name, self.language)
            self._valid_cache[name] = bool(ok)
        return self._valid_cache[name]

    def substitutes(self, name: str, candidates: Iterable[str]) -> list[str]:
        """``candidates`` usable as a new name for ``name``, deduplicated, order kept."""
        out: list[str] = []
        seen: set[str] = set()
        for c in candidates:
            if c == name or c in seen or c in self.taken or not self.valid_name(c):
                continue
            seen.add(c)
            out.append(c)
        return out

    def normalise(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Drop identity entries (a name mapped back to itself)."""
        return {k: v for k, v in mapping.items() if k != v}

    def check(self, mapping: Mapping[str, str]) -> bool:
        """Whether a (normalised) renaming satisfies every constraint."""
        if self.max_changed is not None and len(mapping) > self.max_changed:
            return False
        if len(set(mapping.values())) != len(mapping):
            return False
        for old, new in mapping.items():
            if old not in self.renamable or new in self.taken or not self.valid_name(new):
                return False
        return True
