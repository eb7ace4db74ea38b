"""A recipe as a composition: goal function, constraints, transformation, search.

TextAttack (Morris et al., "TextAttack: A Framework for Adversarial Attacks, Data
Augmentation, and Adversarial Training in NLP", EMNLP 2020 demos) builds every attack as
``Attack(goal_function, constraints, transformation, search_method)``. Each recipe here
declares the same four parts in a :class:`Composition`:

* **goal** — builds one sample's goal function (what counts as success, the score to
  maximise, the query budget): :class:`UntargetedFlip` (the label flips), or the
  teacher–student :class:`~.deviation.goal.DifferentialGoal` of issue 43;
* **constraints** — builds the filters every renaming passes: :class:`RenameRules`;
* **transformation** — what a candidate may change, and which samples it can attack at
  all: :class:`IdentifierRenames` (a sample without renamable identifiers is skipped) or
  :class:`RenamesAndStructure` (CODA's structure rewrites before renames);
* **search** — :class:`Search`, a named function ``(Context) -> Outcome``.

:meth:`Composition.retarget` swaps the goal, which is how the published searches are
pointed at the differential goal without editing them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .constraints import RenameConstraints
from .goal import GoalFunction, QueryModel

logger = logging.getLogger(__name__)


class GoalSpec(Protocol):
    """Builds one sample's goal function (anything with ``get_results``, ``queries``,
    ``requests``, ``exhausted`` and ``remaining``, like :class:`~.goal.GoalFunction`)."""

    @property
    def name(self) -> str: ...

    def build(self, model: QueryModel, row: Mapping[str, str], column: str, label: int, budget: int) -> Any: ...


@dataclass(frozen=True)
class UntargetedFlip:
    """TextAttack's ``UntargetedClassification``: success when the prediction differs from
    the true label; score ``1 - p(label)``."""

    name: str = "untargeted_flip"

    def build(self, model: QueryModel, row: Mapping[str, str], column: str, label: int, budget: int) -> GoalFunction:
        return GoalFunction(model, row, column, label, budget)


@dataclass(frozen=True)
class RenameRules:
    """MHM/ALERT's renaming constraints (:mod:`.constraints`): valid, non-keyword,
    collision-free, injective, at most ``max_changed`` identifiers."""

    max_changed: int | None = None
    name: str = "valid_collision_free_renames"

    def build(self, source: Any, language: str, names: Sequence[str]) -> RenameConstraints:
        return RenameConstraints.for_code(source, language, names, self.max_changed)


def renamable(code: str, language: str) -> list[str] | None:
    """Distinct renamable identifiers in order of first appearance; None if unparsable."""
    from ..transforms import TransformError, renamable_identifiers

    try:
        return list(dict.fromkeys(renamable_identifiers(code, language)))
    except TransformError as exc:
        logger.debug("could not list identifiers: %s", exc)
        return None


@dataclass(frozen=True)
class IdentifierRenames:
    """Consistent identifier renaming with the transformation library's renamer;
    ``substitutes`` says where new names come from (reported in the run's details)."""

    substitutes: str = ""
    name: str = "identifier_renames"

    def sites(self, code: str, language: str) -> tuple[list[str] | None, str | None]:
        """(renamable identifiers, skip reason): a sample this transformation cannot change
        is skipped as ``unparsable`` or ``no_identifiers``."""
        names = renamable(code, language)
        if not names:
            return names, "unparsable" if names is None else "no_identifiers"
        return names, None


@dataclass(frozen=True)
class RenamesAndStructure(IdentifierRenames):
    """CODA's transformation: the ``structure`` rewrites of ``mlflow_metacompress.transforms``
    first, then identifier renames."""

    structure: tuple[str, ...] = ()
    name: str = "structure_rewrites_then_identifier_renames"


@dataclass(frozen=True)
class Search:
    """A named search method bound to its recipe: ``run(ctx) -> Outcome`` over the
    :class:`~.attack.Context` and :class:`~.attack.Outcome` of :mod:`.attack` (typed loosely
    here, as :mod:`.attack` imports this module)."""

    name: str
    run: Callable[[Any], Any]


@dataclass(frozen=True)
class Composition:
    """The four parts of a recipe (TextAttack's ``Attack``)."""

    goal: GoalSpec
    constraints: RenameRules
    transformation: IdentifierRenames
    search: Search

    def retarget(self, goal: GoalSpec) -> Composition:
        """The same constraints, transformation and search towards another goal."""
        return dataclasses.replace(self, goal=goal)

    def describe(self) -> dict[str, str]:
        """``{part: name}``, e.g. for the report and the documentation."""
        return {
            "goal": self.goal.name,
            "constraints": self.constraints.name,
            "transformation": self.transformation.name,
            "search": self.search.name,
        }
