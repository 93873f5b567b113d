"""Die with the orchestrator: a suite process must not go on using a GPU after the process that started it
died
(a SIGKILLed orchestrator would otherwise leave it running under the next run's measurements).

The orchestrator starts the suite in a session of its own (``start_new_session``: a kill takes its children
too) and names itself in ``HARNESS_PARENT_PID``; the suite asks Linux for SIGKILL when that parent goes. It
is set here, in the child, rather than in a ``preexec_fn``, which is unsafe in a process with threads.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PARENT_ENV = "HARNESS_PARENT_PID"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """Where the orchestrator asked for it: SIGKILL this process when its parent exits."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(parent):  # the parent died before the signal was asked for
        os._exit(137)
