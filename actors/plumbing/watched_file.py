"""A YAML configuration file the service follows while it runs: strict reading, and the
signature that tells a change.

Shared by the two files that change without a restart: the export registry
(:mod:`actors.plumbing.registry_source`, followed by a watcher: polling and SIGHUP) and the Provider
map (:mod:`actors.plumbing.provider_map_source`, checked when an export run starts). Both follow the
same rule: a file is read whole and validated whole; a valid one replaces what is in force,
an invalid one is rejected and the old value stays.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Hashable
from typing import Any

import yaml

__all__ = ["FILE_KEY", "FileSignature", "WatchedFileError", "file_signature", "read_yaml_file"]

#: The ``key`` of a validation error about the file as a whole (missing, unreadable, not
#: YAML), in the registry's and the Provider map's errors alike.
FILE_KEY = "<file>"

#: (st_mtime_ns, st_size, st_ino) of a file, or ``None`` when it cannot be stat'ed.
FileSignature = tuple[int, int, int] | None


class WatchedFileError(Exception):
    """The file is missing, unreadable, not UTF-8 or not valid YAML (the message says
    which, naming the file). Callers turn it into their own error on :data:`FILE_KEY`."""


class UniqueKeySafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects duplicate mapping keys.

    PyYAML silently keeps the last of two equal keys, so a copy-pasted block would quietly
    replace the first one (§10.3 asks for keys that are "不重复").
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            # Merge keys (``<<: *anchor``) are expanded by the base class, where an explicit
            # key legitimately overrides a merged one; only explicit repeats are errors.
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml_file(path: str | os.PathLike[str], what: str) -> Any:
    """Read and parse a YAML file with plain types only. Blocking IO.

    Args:
        path: the file.
        what: how messages name it, e.g. ``"registry file"``.

    Returns:
        The document as plain Python values (mappings, lists, strings, numbers …).

    Raises:
        WatchedFileError: the file is missing, unreadable, not UTF-8, not valid YAML, or
            repeats a mapping key.
    """
    file_path = pathlib.Path(path)
    try:
        text = file_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WatchedFileError(f"cannot read {what} {str(file_path)!r}: {exc}") from None
    try:
        # A SafeLoader subclass: no arbitrary Python objects, only plain YAML types.
        return yaml.load(text, Loader=UniqueKeySafeLoader)
    except yaml.YAMLError as exc:
        raise WatchedFileError(f"{what} {str(file_path)!r} is not valid YAML: {exc}") from None


def file_signature(path: pathlib.Path) -> FileSignature:
    """(mtime_ns, size, inode) of ``path``; ``None`` if it cannot be stat'ed. Blocking.

    The inode catches an atomic replace (write a temporary file, rename it over the old
    one; also how a Kubernetes volume swaps its ``..data`` link) that keeps size and mtime.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
