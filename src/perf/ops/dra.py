"""DRA: the test driver's ResourceSlices, its device conditions, claims allocated without pods."""

from __future__ import annotations

import fnmatch
from typing import Any

import attrs

from ...core.api import from_manifest
from ...core.api.meta import Condition
from ...core.api.resource_v1 import AllocatedDeviceStatus
from ...core.cluster.client import Conflict
from ...core.dra.allocator import AllocatedState, Allocator, gate_options
from ...core.dra.claims import allocated_results
from ...core.dra.selectors import SelectorCache
from ..errors import PerfConfigError, WorkloadFailed
from .base import PerfOp

#: The binding condition and binding failure condition of createResourceDriver's devices
#: under the DRADeviceBindingConditions gate (the condition types upstream's tests report).
DEVICE_ATTACHED = "DeviceAttached"
ATTACHMENT_FAILED = "AttachmentFailed"


class CreateResourceDriver(PerfOp):
    """Upstream's test driver: one ResourceSlice per node whose name matches
    the ``nodes`` glob, named after the node, with ``maxClaimsPerNode``
    devices ``instance-<i>`` (model A100, family GPU, driverVersion 1.2.3,
    ``dra.example.com/numa`` i, memory 1Gi).  With the DRADeviceBindingConditions
    gate the devices need attaching first: binding condition
    :data:`DEVICE_ATTACHED`, binding failure condition :data:`ATTACHMENT_FAILED`
    (what ``updateDeviceConditions`` reports)."""

    FIELDS = ("driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) an empty ``driverName`` or ``nodes``, and neither ``maxClaimsPerNode`` nor its
        param (upstream's message)."""
        for key in ("driverName", "nodes"):
            if not isinstance(fields.get(key), str) or not fields[key]:
                raise PerfConfigError(f"{where}: {key} must be set")
        if "maxClaimsPerNode" not in fields and "maxClaimsPerNodeParam" not in fields:
            raise PerfConfigError(f"{where}: invalid MaxClaimsPerNode=0 / MaxClaimsPerNodeParam=\"\"")

    def run(self) -> None:
        executor = self.executor
        driver = self.fields["driverName"]
        count = self.fields.get("maxClaimsPerNode", 0)
        binding = {"bindsToNode": True, "bindingConditions": [DEVICE_ATTACHED],
                   "bindingFailureConditions": [ATTACHMENT_FAILED]} \
            if executor.feature_gates.get("DRADeviceBindingConditions") else {}
        for node in sorted(executor.cluster.list("Node").items, key=lambda n: n.metadata.name):
            if not fnmatch.fnmatchcase(node.metadata.name, self.fields["nodes"]):
                continue
            name = node.metadata.name
            devices = [{
                "name": f"instance-{i}",
                "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                               "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                "capacity": {"memory": {"value": "1Gi"}},
                **binding,
            } for i in range(count)]
            executor.cluster.create(from_manifest({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                "spec": {"driver": driver, "nodeName": name, "pool": {"name": name, "resourceSliceCount": 1},
                         "devices": devices},
            }))


class UpdateDeviceConditions(PerfOp):
    """Plays the driver of devices with binding conditions for ``duration``:
    whenever a claim of ``namespace`` is allocated devices that have binding
    conditions, sets ``conditionType`` to ``conditionStatus`` for each of them
    in the claim's ``status.devices``.  (kubesched's reading of upstream's
    op: it runs for the whole duration, as claims a failure deallocated are
    allocated again and reported again.)"""

    FIELDS = ("namespace", "conditionType", "ConditionTypeParam", "conditionStatus", "ConditionStatusParam",
              "duration", "durationParam")

    def run(self) -> None:
        executor = self.executor
        cluster = executor.cluster
        clock = executor.clock
        namespace = self.fields["namespace"]
        condition = Condition(type=self.fields["conditionType"], status=self.fields["conditionStatus"],
                              reason="SchedulerPerf")
        end = clock.now() + self.fields.get("duration", 0.0)

        def report() -> None:
            for claim in cluster.list("ResourceClaim", namespace).items:
                wanted = {(r.driver, r.pool, r.device) for r in allocated_results(claim) if r.binding_conditions}
                reported = {(d.driver, d.pool, d.device) for d in claim.status.devices
                            if any(c.type == condition.type for c in d.conditions)}
                if wanted - reported:
                    stamped = attrs.evolve(condition, last_transition_time=clock.now())
                    devices = tuple(AllocatedDeviceStatus(driver=d, pool=p, device=n, conditions=(stamped,))
                                    for d, p, n in sorted(wanted))
                    try:
                        cluster.update_status(attrs.evolve(claim, status=attrs.evolve(claim.status, devices=devices)))
                    except Conflict:
                        pass  # the scheduler changed it meanwhile: looked at again on the next step

        report()
        executor.loop(lambda: clock.now() >= end, "updateDeviceConditions", deadline=end, on_step=report,
                      until_time=True)


class AllocResourceClaims(PerfOp):
    """Allocates every unallocated claim of ``namespace`` (all when empty) on a
    random node, one at a time, without a pod (upstream's allocResourceClaims)."""

    FIELDS = ("namespace",)

    def run(self) -> None:
        """Raises WorkloadFailed for a claim no node can satisfy."""
        executor = self.executor
        cluster = executor.cluster
        namespace = self.fields.get("namespace") or None
        claims = sorted(cluster.list("ResourceClaim", namespace).items, key=lambda c: c.key)
        nodes = sorted(cluster.list("Node").items, key=lambda n: n.metadata.name)
        allocated = AllocatedState.from_claims(cluster.list("ResourceClaim").items)
        allocator = Allocator(cluster.list("ResourceSlice").items,
                              {c.metadata.name: c for c in cluster.list("DeviceClass").items},
                              allocated, SelectorCache(), cluster.list("DeviceTaintRule").items,
                              now=executor.clock.now(), **gate_options(cluster.features))
        for claim in claims:
            if claim.status.allocation is not None:
                continue
            executor.rng.shuffle(nodes)
            for node in nodes:
                results = allocator.allocate(node, [claim])
                if results:
                    allocation = results[0]
                    cluster.update_status(attrs.evolve(claim, status=attrs.evolve(claim.status,
                                                                                  allocation=allocation)))
                    allocated.add(allocation)
                    # counters and compatibility groups the allocator derived from the old state
                    allocator = allocator.with_allocated(allocated)
                    break
            else:
                raise WorkloadFailed(f"could not allocate claim {claim.key}")
