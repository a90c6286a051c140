"""The structured allocator as a library (upstream's k8s.io/dynamic-resource-allocation
``structured``), behind this facade: :class:`Allocator` (one per scheduling cycle,
:meth:`Allocator.allocate` per node, over an :class:`AllocatedState` of the devices in use,
keyed by :class:`DeviceID`), the errors it raises (:class:`AllocationError` and its
:class:`MissingDeviceClass`, :class:`AllocationTimeout`), :data:`INVALID_POOLS`, the
per-node reason of a node whose pools are invalid, and :func:`within_deadline` (selector
evaluations outside ``allocate`` that stop at a deadline with AllocationTimeout) and
:func:`gate_options` (the Allocator arguments feature gates decide).

Inside: the search over devices for a node (``allocator``), the requests and candidate
devices it searches with (``requests``), the pools it sees from that node (``pools``),
consumable capacity (``capacity``), constraints across a claim's devices
(``constraints``; :func:`unpublished_attributes` names the constraints no device can meet),
compatibility groups (``compatibility``) and the memo of searches on
equivalent nodes (``equivalence``).  Import from the facade; the modules may move.
"""

from kubesched.core.dra.allocated_devices import AllocatedState, DeviceID
from kubesched.core.dra.allocator.allocator import (
    INVALID_POOLS,
    AllocationTimeout,
    Allocator,
    gate_options,
    within_deadline,
)
from kubesched.core.dra.allocator.constraints import unpublished_attributes
from kubesched.core.dra.allocator.requests import AllocationError, MissingDeviceClass

__all__ = [
    "INVALID_POOLS",
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DeviceID",
    "MissingDeviceClass",
    "gate_options",
    "unpublished_attributes",
    "within_deadline",
]
