"""The JSON Schemas in ``schemas/`` and readable validation messages for them."""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import jsonschema
import rfc3339_validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from harness import resources
from harness.errors import MAX_PROBLEMS as MAX_PROBLEMS
from harness.errors import Problem

SCHEMA_DIR = resources.data_dir("schemas")


@cache
def validator(name: str) -> Validator:
    """The checked validator for ``schemas/<name>.schema.json``."""
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    checker: Validator = _EcmaValidator(_inlined(schema), format_checker=FORMATS)
    return checker


_LOCAL = "#/$defs/"


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``{"$ref": "#/$defs/x"}`` replaced by the definition itself (with siblings: an
    ``allOf`` of it and them, which 2020-12 means by a ``$ref`` beside other keywords). The same schema,
    checked without resolving a reference at every item: a result's measurements validate a third faster.
    A definition that refers to itself keeps its ``$ref`` (``$defs`` stay for it)."""
    defs = schema.get("$defs", {})

    def walk(node: Any, within: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(x, within) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_LOCAL) and ref[len(_LOCAL) :] in defs:
            name = ref[len(_LOCAL) :]
            if name not in within:
                target = walk(defs[name], (*within, name))
                rest = {k: walk(v, within) for k, v in node.items() if k != "$ref"}
                return {"allOf": [target], **rest} if rest else target
        return {k: (v if k == "$defs" else walk(v, within)) for k, v in node.items()}

    flat: dict[str, Any] = walk(schema, ())
    return flat


def ecma_pattern(pattern: str) -> re.Pattern[str]:
    r"""``pattern`` with JSON Schema's (ECMA-262) meaning of ``$``: the end of the string.

    Python's ``$`` also matches before a final newline, so "2.13.0+cpu\n" would pass
    ``^...$`` and carry a newline into a Dockerfile or a shell; ``\Z`` does not.
    """
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        out.append(char)
    return _compiled("".join(out))


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not ecma_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# 'format' is only an annotation unless checked; date-time needs rfc3339-validator, imported so that its
# absence is an ImportError here rather than every timestamp silently passing.
FORMATS = jsonschema.FormatChecker(formats=["date-time"])
assert rfc3339_validator.validate_rfc3339 and "date-time" in FORMATS.checkers

_EcmaValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {"pattern": _pattern}
)


# MAX_PROBLEMS (errors): listed per document; the rest are counted
MAX_ERRORS_READ = 1000  # the validator is not asked for more: a million faults cost no time


def problems(
    name: str,
    document: Any,
    source: str,
    line_of: Callable[[Sequence[Any]], int | None] | None = None,
) -> list[Problem]:
    """Every violation of schema ``name`` in ``document``, one Problem each, in document order."""
    found = []
    errors = list(itertools.islice(validator(name).iter_errors(document), MAX_ERRORS_READ + 1))
    for error in sorted(errors[:MAX_ERRORS_READ], key=lambda e: [str(p) for p in e.path]):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = sorted(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
            for key in sorted(set(error.instance) - set(known)):  # each unknown key at its own line
                line = line_of([*path, key]) if line_of else None
                found.append(Problem(source, field_name([*path, key]), _unknown(key, known), line))
            continue
        line = line_of(path) if line_of else None
        found.append(Problem(source, field_name(path), _message(error), line))
    found = sorted(found, key=lambda p: p.line or 0)
    if len(found) > MAX_PROBLEMS:  # a hostile document's thousand faults are told as the first few
        more = f"{len(found) - MAX_PROBLEMS}" if len(errors) <= MAX_ERRORS_READ else "many"
        found = [*found[:MAX_PROBLEMS], Problem(source, "", f"and {more} more problems, not listed")]
    return found


def _unknown(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r}; {hint}allowed: {', '.join(known)}"


def field_name(path: Sequence[Any]) -> str:
    """``['axes', 'cudnn', 1]`` -> ``axes.cudnn[1]``."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text or "(document)"


def _message(error: ValidationError) -> str:
    """jsonschema's message, rewritten where it would not tell a user what is allowed."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    allowed = schema.get("description")
    value = _short(error.instance)
    if (
        error.validator == "type"
        and isinstance(error.instance, (int, float))
        and "string" in str(error.validator_value)
    ):
        return f"{value} is a number here, not text (YAML reads 3.10 as 3.1); write the value in quotes"
    if error.validator in ("oneOf", "anyOf"):
        choices = _enums(error)
        words = [c for c in choices if isinstance(c, str)]
        close = (
            difflib.get_close_matches(error.instance, words, n=1) if isinstance(error.instance, str) else []
        )
        expected = allowed or " or ".join(map(repr, choices)) or "another value"
        return (
            f"{value} is not allowed; "
            + (f"did you mean {close[0]!r}? " if close else "")
            + f"expected {expected}"
        )
    if error.validator in ("pattern", "not", "format"):
        return f"{value} is not allowed; expected {allowed or _shortened(error)}"
    if error.validator == "enum":
        return f"{value} is not allowed; expected one of {', '.join(map(repr, schema.get('enum', ())))}"
    if error.validator == "const":
        return f"{value} is not allowed; expected {error.validator_value!r}"
    message = _shortened(error)
    if allowed and error.validator not in ("required", "minItems", "uniqueItems"):
        return f"{message} ({allowed})"
    return message


def _shortened(error: ValidationError) -> str:
    """jsonschema's message with the value it starts with shortened: '[1, 2, ...] is too long', never the
    megabyte of a hostile array before the words that say what is wrong."""
    whole = repr(error.instance)
    if error.message.startswith(whole):
        return _short(error.instance) + error.message[len(whole) :]
    return error.message


def _enums(error: ValidationError) -> list[Any]:
    """Every value an enum allows anywhere under a oneOf/anyOf error: what a mistyped word was meant as."""
    found = []
    for sub in error.context or ():
        allowed = sub.validator_value
        found += list(allowed) if sub.validator == "enum" and isinstance(allowed, list) else _enums(sub)
    return list(dict.fromkeys(found))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
