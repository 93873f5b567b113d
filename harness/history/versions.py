"""Release labels in their order: 9.2.0 before 9.10.0, 2.11.0+cu130 after 2.9.1+cu128."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+)|([^\d]+)")


def version_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that orders the numbers in a label as numbers, the rest as text."""
    return tuple((0, int(m[1]), "") if m[1] else (1, 0, m[2]) for m in _PART.finditer(text))
