"""Strict YAML loading: plain data only, with line numbers for error messages.

Refused: duplicate keys, anchors/aliases (the "billion laughs" expansion), and every tag that
would construct an object (PyYAML's SafeLoader already refuses ``!!python/...``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from harness.errors import InputError, Problem

MAX_BYTES = 1_000_000


class _StrictLoader(yaml.SafeLoader):
    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise ConstructorError(None, None, "anchors and aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)  # type: ignore[no-any-return]

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            if key in seen:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first defined on line {seen[key]}); keep one",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


Locator = Callable[[Sequence[Any]], "int | None"]


def load(path: Path) -> tuple[Any, Locator]:
    """Parse ``path``; return the data and a function mapping a JSON path to a line number."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError([Problem(source, "", f"cannot read: {exc.strerror}")]) from None
    if len(raw) > MAX_BYTES:
        raise InputError([Problem(source, "", f"file is {len(raw)} bytes; the limit is {MAX_BYTES}")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(source, "", f"not UTF-8 text (byte {exc.start})")]) from None
    loader = None
    try:
        loader = _StrictLoader(text)  # its reader already refuses control characters
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
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
    return data, lambda json_path: _line_of(node, json_path)


def _line_of(node: Node | None, json_path: Sequence[Any]) -> int | None:
    line = node.start_mark.line + 1 if node is not None else None
    for step in json_path:
        if isinstance(node, MappingNode):
            node = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line
