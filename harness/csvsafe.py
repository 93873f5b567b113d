"""CSV that a spreadsheet opens as data: every CSV the harness writes goes through ``to_csv``.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (``=HYPERLINK(...)`` in a warning would run when the file is opened), so it
is written with a single quote before it, as OWASP recommends against CSV injection; a line break in text
is a quoted line feed, never the end of a row. Numbers stay numbers: only text is touched, so a column of
-1.5 is still -1.5.
"""

from __future__ import annotations

import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> object:
    """``value``, with a quote before it where it is text a spreadsheet would read as a formula, and a
    carriage return in it a line feed (Python's writer quotes a field holding a line feed, not one holding
    a bare carriage return, which a reader takes for the end of the row)."""
    if not isinstance(value, str):
        return value
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    return f"'{text}" if value.startswith(FORMULA_START) else text


def to_csv(frame: pd.DataFrame) -> str:
    """``frame`` as CSV without its index, each text cell (column names included) through ``cell``."""
    safe = frame.rename(columns=cell)
    for i in range(safe.shape[1]):  # by position: a name may repeat
        column = safe.iloc[:, i]
        if not (is_numeric_dtype(column) or is_bool_dtype(column)):
            safe.isetitem(i, column.map(cell))
    text: str = safe.to_csv(index=False)
    return text
