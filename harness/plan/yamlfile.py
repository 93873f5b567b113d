"""Strict YAML loading: plain data only, with line numbers for error messages.

Refused: duplicate keys, keys that are not text, anchors/aliases (the "billion laughs" expansion),
NaN and infinity (``.nan``, ``.inf``, ``1e999``: no setting means them), and every tag that would
construct an object (PyYAML's SafeLoader already refuses ``!!python/...``). Only a regular file is
read, and only up to MAX_BYTES, so a FIFO or a device given as a matrix cannot hang or flood us.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness import jsonio
from harness.errors import InputError, Problem

MAX_BYTES = 1_000_000


class _StrictLoader(yaml.SafeLoader):
    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise ConstructorError(None, None, "anchors and aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise ConstructorError(
                    None,
                    None,
                    f"key {key_node.value!r} is not text; every key is a name",
                    key_node.start_mark,
                )
            if key in seen:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first defined on line {seen[key]}); keep one",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_finite_float(self, node: ScalarNode) -> float:
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise ConstructorError(
                None, None, f"{node.value!r} is not a finite number; write a plain number", node.start_mark
            )
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
