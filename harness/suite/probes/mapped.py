"""Which library files this process has mapped, read from the process itself (``/proc/self/maps``): what
the probes trust, never the environment that was set up."""

from __future__ import annotations

import os
import re


def mapped_files(name: re.Pattern[str]) -> list[str]:
    """Real paths of every file mapped into this process whose path ``name`` finds, sorted (none where the
    maps cannot be read)."""
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and name.search(parts[5].strip()):
                    found.add(os.path.realpath(parts[5].strip()))
    except OSError:
        pass
    return sorted(found)
