"""The GPUs of every node as numpy arrays, kept current from the scheduler's DRA manager.

A GPU is a device of one DRA driver published in a node-local ResourceSlice;
its compute is its capacity ``compute`` (1 = 1000 milli-GPU; a device without
it counts as one whole GPU).  A device in use by a claim without a share
(exclusive) has nothing left; a shared one has its compute minus what the
allocations of its shares consumed.  GPUs of a node are numbered in slice
order (slices by name, devices as published).

:class:`NodeGpus` lines these numbers up with the rows of a
:class:`~kubesched.core.framework.snapshot.NodeTable`, so that batch Score
plugins and the replay read ``left[rows]`` next to the table's CPU columns::

    gpus = NodeGpus(handle.dra)            # once, in the plugin's constructor
    gpus.sync(table)                       # each cycle: align with the table, apply claim changes
    gpus.left[rows], gpus.capacity[rows]   # (rows, max GPUs per node) milli-GPU
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..dra.allocated_devices import DeviceID
from ..dra.manager import DRAManager

#: The DRA driver (and DeviceClass) name of the GPUs.
DRIVER = "gpu.example.com"
#: The shareable capacity of a GPU: 1 (= 1000m) per device.
COMPUTE = "compute"
#: The attribute carrying the GPU model.
MODEL = "model"
#: Milli-GPU in one GPU.
MILLI = 1000


class NodeGpus:
    """Per NodeTable row: ``capacity`` and ``left`` ((rows, G) int64 milli-GPU,
    0 where a node has fewer than G GPUs), ``count`` (GPUs per node),
    ``models`` (GPU model per node, "" without GPUs) and ``versions`` (grows
    when one of the node's GPUs changes).  ``slot[DeviceID] = (row, index)``.

    ``driver``, ``compute`` and ``model``: the DRA driver whose devices are
    GPUs, the capacity holding their compute and the attribute naming their model.
    """

    def __init__(self, dra: DRAManager, driver: str = DRIVER, compute: str = COMPUTE, model: str = MODEL):
        self.dra = dra
        self.driver = driver
        self.compute = compute
        self.model = model
        self.table = None
        self.capacity = np.zeros((0, 0), dtype=np.int64)
        self.left = np.zeros((0, 0), dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int64)
        self.versions = np.zeros(0, dtype=np.int64)
        self.models: list[str] = []
        self.slot: dict[DeviceID, tuple[int, int]] = {}
        self._slice_generation = -1
        self._changed: set[DeviceID] = set()
        dra.add_device_listener(self._devices_changed)

    def _devices_changed(self, devices: set[DeviceID]) -> None:
        self._changed.update(device for device in devices if device.driver == self.driver)

    def sync(self, table) -> None:
        """Line up with ``table`` (a NodeTable) and bring ``left`` up to date."""
        if table is not self.table or self.dra.slice_generation != self._slice_generation:
            self._rebuild(table)
            return
        if self._changed:
            changed, self._changed = self._changed, set()
            for device in changed:
                self._refresh(device)

    def _rebuild(self, table) -> None:
        self.table = table
        self._slice_generation = self.dra.slice_generation
        self._changed.clear()
        layout: list[list[tuple[DeviceID, int]]] = []
        models: list[str] = []
        for info in table.infos:
            gpus: list[tuple[DeviceID, int]] = []
            model = ""
            for resource_slice in self.dra.node_slices(info.name):
                if resource_slice.spec.driver != self.driver:
                    continue
                for device in resource_slice.spec.devices:
                    gpus.append((DeviceID(self.driver, resource_slice.spec.pool.name, device.name),
                                 self._device_milli(device)))
                    found = device.lookup_attribute(self.model, self.driver)
                    if found is not None and not model:
                        model = str(found.value)
            layout.append(gpus)
            models.append(model)
        width = max((len(g) for g in layout), default=0)
        self.capacity = np.zeros((len(layout), width), dtype=np.int64)
        self.slot = {}
        for row, gpus in enumerate(layout):
            for index, (device_id, milli) in enumerate(gpus):
                self.capacity[row, index] = milli
                self.slot[device_id] = (row, index)
        self.left = self.capacity.copy()
        self.count = np.array([len(g) for g in layout], dtype=np.int64)
        self.models = models
        self.versions = np.zeros(len(layout), dtype=np.int64)
        allocated = self.dra.allocated
        for allocated_id in set(allocated.devices) | set(allocated.consumed_capacity):
            if allocated_id in self.slot:
                self._refresh(allocated_id)

    def _device_milli(self, device) -> int:
        entry = device.capacity.get(self.compute) or device.lookup_capacity(self.compute, self.driver)
        return _milli(entry.value) if entry is not None else MILLI

    def _refresh(self, device: DeviceID) -> None:
        where = self.slot.get(device)
        if where is None:
            return
        row, index = where
        allocated = self.dra.allocated
        if device in allocated.devices:
            left = 0
        else:
            used = allocated.consumed_capacity.get(device, {})
            consumed = used.get(self.compute, 0)
            left = self.capacity[row, index] - _milli(consumed)
            if allocated.is_allocated(device) and self.compute not in used:
                left = 0  # shared without consuming compute: the whole GPU is taken
        self.left[row, index] = left
        self.versions[row] += 1

    def model_codes(self, code) -> np.ndarray:
        """``code(model)`` per row (e.g. :meth:`~.fragmentation.Workload.model_code`)."""
        return np.array([code(m) for m in self.models], dtype=np.int64)


def _milli(amount: Fraction | int) -> int:
    """``int(amount * 1000)`` (truncated toward zero) of an exact amount, without Fraction arithmetic."""
    exact = amount if type(amount) is Fraction else Fraction(amount)
    whole = abs(exact.numerator) * MILLI // exact.denominator
    return whole if exact.numerator >= 0 else -whole
