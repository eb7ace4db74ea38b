"""Checks of what models return and of labels against their classes, shared by every
caller of a model adapter (the evaluator, the attacks): probabilities (N×K, finite,
non-negative, rows summing to 1), class alignment between two models, labels as class
indices. Each error names what is wrong; :class:`MetaCompressInputError` is the
project's one error for bad input.
"""

from __future__ import annotations

import numpy as np

ROW_SUM_TOLERANCE = 1e-3

__all__ = ["ROW_SUM_TOLERANCE", "MetaCompressInputError", "align_classes", "check_probabilities", "encode_labels"]


class MetaCompressInputError(ValueError):
    """Bad input to the evaluator; the message names the column, value or model at fault."""


def check_probabilities(P: object, who: str, n_rows: int | None = None) -> np.ndarray:
    """Return a float64 N×K array or raise, naming ``who`` and the first bad row.

    Rejected: NaN, ±inf, negatives, rows whose sum is more than 1e-3 from 1. Rows within
    the tolerance are renormalised so they sum to exactly 1.
    """
    arr = np.asarray(P, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise MetaCompressInputError(f"{who} probabilities must be an N×K array with K ≥ 2; got shape {arr.shape}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise MetaCompressInputError(f"{who} returned {arr.shape[0]} rows of probabilities for {n_rows} input rows")
    for what, mask in (
        ("NaN", np.isnan(arr)),
        ("an infinite value", np.isinf(arr)),
        ("a negative probability", arr < 0),
    ):
        if mask.any():
            row = int(np.argwhere(mask)[0][0])
            raise MetaCompressInputError(f"{who} probabilities contain {what} in row {row}: {arr[row].tolist()}")
    sums = arr.sum(axis=1)
    off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise MetaCompressInputError(
            f"{who} probabilities in row {row} sum to {sums[row]:.6g}, more than {ROW_SUM_TOLERANCE} away from 1: "
            f"{arr[row].tolist()}"
        )
    return arr / sums[:, None]


def align_classes(
    teacher: np.ndarray, teacher_classes: list[str] | None, student: np.ndarray, student_classes: list[str] | None
) -> tuple[np.ndarray, list[str] | None]:
    """Reorder the student's columns to the teacher's class order.

    Both named: the class sets must be equal (columns are matched by name). Otherwise the
    class counts must agree and columns are matched by position.
    """
    if teacher.shape[1] != student.shape[1]:
        raise MetaCompressInputError(
            f"teacher and student disagree on the number of classes: teacher has {teacher.shape[1]} "
            f"({teacher_classes}), student has {student.shape[1]} ({student_classes})"
        )
    if teacher_classes is not None and student_classes is not None:
        if set(teacher_classes) != set(student_classes):
            raise MetaCompressInputError(
                f"teacher classes {teacher_classes} and student classes {student_classes} differ: "
                f"only in teacher {sorted(set(teacher_classes) - set(student_classes))}, "
                f"only in student {sorted(set(student_classes) - set(teacher_classes))}"
            )
        order = [student_classes.index(c) for c in teacher_classes]
        return student[:, order], list(teacher_classes)
    return student, teacher_classes or student_classes


def encode_labels(
    y: np.ndarray, classes: list[str] | None, k: int, column: str = "targets", index_labels: bool = False
) -> np.ndarray:
    """Map labels to class indices; a label outside the models' classes is named.

    Labels are matched to class names first. With ``index_labels`` (the classes are the
    teacher's label ids in order, as for a Hugging Face ``id2label``), an integer label
    that names no class is read as a label id: ``1`` is ``classes[1]``.
    """
    y = np.asarray(y)
    if y.dtype.kind in "iufb":
        y = y.tolist()  # plain Python values, so messages read "label 7", not "np.int64(7)"
        y = np.asarray(y, dtype=object)
    if classes is not None:
        lookup = {str(c): i for i, c in enumerate(classes)}
        out = np.empty(len(y), dtype=np.int64)
        for i, v in enumerate(y):
            key = str(int(v)) if isinstance(v, (float, np.floating)) and float(v).is_integer() else str(v)
            if key not in lookup and index_labels and _is_index(v, k):
                out[i] = int(v)
                continue
            if key not in lookup:
                raise MetaCompressInputError(
                    f"label {v!r} in {column!r} (row {i}) is not one of the models' classes {classes}"
                )
            out[i] = lookup[key]
        return out
    try:
        out = np.asarray([int(v) for v in y], dtype=np.int64)
        same = np.asarray([float(v) == o for v, o in zip(y, out, strict=True)])
    except (TypeError, ValueError):
        raise MetaCompressInputError(
            f"labels in {column!r} must be class indices 0..{k - 1} when the models do not name their classes"
        ) from None
    bad = (out < 0) | (out >= k) | ~same
    if bad.any():
        i = int(np.argmax(bad))
        raise MetaCompressInputError(
            f"label {y[i]!r} in {column!r} (row {i}) is outside the models' classes 0..{k - 1}"
        )
    return out


def _is_index(value: object, k: int) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return 0 <= int(value) < k
    return False
