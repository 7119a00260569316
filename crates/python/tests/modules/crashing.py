"""A streamlet whose process dies on a record, as a segfaulting extension would."""

import os
import sys

import runnel
from runnel.examples import Reading


@runnel.streamlet
def crash_on(reading: Reading) -> Reading:
    if reading.sensor == "crash":
        print("about to crash on purpose", file=sys.stderr)
        os._exit(3)
    return reading
