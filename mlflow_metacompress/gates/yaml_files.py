"""YAML files read strictly, for gate policies (:mod:`.policy`) and the webhook worker's
config: a key repeated in one mapping is an error, and every problem reading the file
names the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that rejects a key repeated in one mapping (plain PyYAML keeps
    the last one silently, so a typo'd duplicate would quietly loosen a gate)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def read_yaml_file(path: Path, what: str, error: type[Exception]) -> Any:
    """The YAML document in ``path``, read with :func:`unique_key_loader`; every problem
    (missing, a directory, unreadable, not UTF-8, invalid YAML, a duplicated key) raises
    ``error`` naming ``what`` ("policy", "config") and the file."""
    import yaml

    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise error(f"{what} file {path} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} path {path} is a directory, not a YAML file") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
        ) from None
    except OSError as exc:
        raise error(f"{what} file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
