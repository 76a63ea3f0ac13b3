# SPDX-License-Identifier: GPL-2.0
"""The busy work of the attach_python*_test.sh programs, copied beside them."""
import time


def spin_for(seconds):
    """Run Python's eval loop for @seconds of wall time."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n
