"""What ``compare`` can print and in which order: names the command line offers, kept apart from
``terminal`` so that building the parser loads no pandas or scipy."""

from __future__ import annotations

from typing import Literal

Format = Literal["table", "md", "csv", "json"]
Sort = Literal["name", "ratio"]
FORMATS: tuple[Format, ...] = ("table", "md", "csv", "json")
SORTS: tuple[Sort, ...] = ("name", "ratio")
