"""Strict YAML loading: plain data only, with line numbers for error messages.

Refused: duplicate keys, keys that are not text, anchors/aliases (the "billion laughs" expansion),
NaN and infinity (``.nan``, ``.inf``, ``1e999``: no setting means them), and every tag that would
construct an object (PyYAML's SafeLoader already refuses ``!!python/...``). Only a regular file is
read, and only up to MAX_BYTES, so a FIFO or a device given as a matrix cannot hang or flood us.
Duplicate keys, keys that are not text and numbers that are not finite are told all at once: the
document is read to its end first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness import jsonio
from harness.errors import InputError, Problem

MAX_BYTES = 1_000_000


class _StrictLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.faults: list[tuple[str, Mark]] = []  # what the document holds that no matrix means

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise ConstructorError(None, None, "anchors and aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        kept = []  # a faulty key is told and left out, so that the rest of the document is still read
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                self.faults.append(
                    (f"key {key_node.value!r} is not text; every key is a name", key_node.start_mark)
                )
            elif key in seen:
                self.faults.append(
                    (
                        f"duplicate key {key!r} (first defined on line {seen[key]}); keep one",
                        key_node.start_mark,
                    )
                )
            else:
                seen[key] = key_node.start_mark.line + 1
                kept.append((key_node, value_node))
        node.value = kept
        return super().construct_mapping(node, deep=deep)

    def construct_finite_float(self, node: ScalarNode) -> float:
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            self.faults.append(
                (f"{node.value!r} is not a finite number; write a plain number", node.start_mark)
            )
            return 0.0  # told above; the document is refused whatever stands here
        return value


_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_finite_float)


Locator = Callable[[Sequence[Any]], "int | None"]


def load(path: Path) -> tuple[Any, Locator]:
    """Parse ``path``; return the data and a function mapping a JSON path to a line number."""
    source = str(path)
    try:
        raw = jsonio.read_bytes(path, MAX_BYTES, decompress=False)
    except jsonio.TooLarge as exc:
        raise InputError([Problem(source, "", f"file {exc}")]) from None
    except OSError as exc:
        raise InputError([Problem(source, "", f"cannot read: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(source, "", f"not UTF-8 text (byte {exc.start})")]) from None
    loader = None
    try:
        loader = _StrictLoader(text)  # its reader already refuses control characters
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        faults = sorted(loader.faults, key=lambda fault: (fault[1].line, fault[1].column))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        message = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError([Problem(source, "", f"invalid YAML: {message}", line)]) from None
    except RecursionError:
        raise InputError([Problem(source, "", "invalid YAML: nested too deeply")]) from None
    finally:
        if loader is not None:
            loader.dispose()
    if faults:
        raise InputError([Problem(source, "", f"invalid YAML: {why}", mark.line + 1) for why, mark in faults])
    return data, lambda json_path: _line_of(node, json_path)


def _line_of(node: Node | None, json_path: Sequence[Any]) -> int | None:
    """The line of the value at ``json_path``; a mapping's entry is on its key's line (a block value
    begins on the line after its key: ``knobz:`` on line 24 was said to be on 25)."""
    line = node.start_mark.line + 1 if node is not None else None
    for step in json_path:
        at = None
        if isinstance(node, MappingNode):
            key, node = next(((k, v) for k, v in node.value if k.value == step), (None, None))
            at = key
        elif isinstance(node, SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = at = node.value[step]
        else:
            node = None
        if node is None or at is None:
            break
        line = at.start_mark.line + 1
    return line
