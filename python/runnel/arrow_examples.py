"""Streamlets of the arrow form, which take and emit pyarrow tables (they need pyarrow)."""

from __future__ import annotations

import pyarrow
import pyarrow.compute

import runnel
from runnel.examples import Reading


@runnel.streamlet
class WarmerArrow:
    """``warmer`` in the arrow form: every reading of a batch a degree warmer, a column at a
    time (the benchmarks' Arrow map)."""

    readings = runnel.Inlet(Reading)
    warmer = runnel.Outlet(Reading)

    def process_batch(self, readings: pyarrow.Table) -> None:
        warmer = pyarrow.compute.add(readings["celsius"], 1.0)
        self.warmer.emit(readings.set_column(1, "celsius", warmer), key="sensor")


@runnel.streamlet
class HotArrow:
    """The readings above ``limit``, in the arrow form; a reading of NaN fails."""

    readings = runnel.Inlet(Reading)
    hot = runnel.Outlet(Reading)
    limit = runnel.Parameter(float, default=30.0)

    def process_batch(self, readings: pyarrow.Table) -> None:
        celsius = readings["celsius"]
        if pyarrow.compute.any(pyarrow.compute.is_nan(celsius)).as_py():
            raise ValueError("a reading is NaN")
        self.hot.emit(readings.filter(pyarrow.compute.greater(celsius, self.limit)))
