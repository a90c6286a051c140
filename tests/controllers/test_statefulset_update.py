"""StatefulSet updates (upstream pkg/controller/statefulset/stateful_set_control_test.go:
TestStatefulSetControlRollingUpdate - pods replaced from the highest ordinal down, one at a time, the revision
becoming current at the end; TestStatefulSetControlRollingUpdateWithPartition - ordinals below the partition
keep the current revision, even when made again; TestStatefulSetControlOnDelete - nothing replaced until
deleted; TestStatefulSetControlRollingUpdateWithMaxUnavailable; and pkg/apis/apps/validation's updateStrategy
checks)."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api.validation import problems
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node

from .workloads import workload

REVISION = "controller-revision-hash"


def db(replicas=4, **spec):
    return workload("StatefulSet", "db", replicas=replicas, serviceName="db", **spec)


def started(sts, start_delay="0s"):
    sim = Simulation(controller_options={"kubelet": {"startDelay": start_delay}})
    sim.create([node("n1", cpu="8"), sts])
    sim.run()
    deleted: list[str] = []
    delete = sim.cluster.delete

    def recording(kind, name, namespace="", uid=None):
        if kind == "Pod":
            deleted.append(name)
        return delete(kind, name, namespace, uid=uid)

    sim.cluster.delete = recording  # type: ignore[method-assign]
    return sim, deleted


def change_template(sim, image="app:2"):
    sts = sim.get("StatefulSet", "default/db")
    template = sts.spec.template
    containers = tuple(attrs.evolve(c, image=image) for c in template.spec.containers)
    template = attrs.evolve(template, spec=attrs.evolve(template.spec, containers=containers))
    sim.cluster.update(attrs.evolve(sts, spec=attrs.evolve(sts.spec, template=template)))


def revisions(sim):
    return {p.metadata.name: p.metadata.labels[REVISION] for p in sim.pods()}


def test_a_rolling_update_replaces_pods_from_the_highest_ordinal_down_one_at_a_time():
    sim, deleted = started(db(), start_delay="10s")
    before = sim.get("StatefulSet", "default/db").status
    assert before["currentRevision"] == before["updateRevision"] and before["currentReplicas"] == 4
    change_template(sim)
    sim.run_for(15)  # db-3 replaced and started at 10 s; then db-2 replaced, starting at 20 s; db-1 waits
    status = sim.get("StatefulSet", "default/db").status
    update = status["updateRevision"]
    assert update != before["updateRevision"] and status["currentRevision"] == before["currentRevision"]
    assert deleted == ["db-3", "db-2"] and status["updatedReplicas"] == 2
    assert sim.pod("db-3").status.phase == "Running" and sim.pod("db-2").status.phase in ("", "Pending")
    sim.run()
    assert deleted == ["db-3", "db-2", "db-1", "db-0"]
    assert set(revisions(sim).values()) == {update}
    assert all(p.spec.containers[0].image == "app:2" for p in sim.pods())
    status = sim.get("StatefulSet", "default/db").status
    assert (status["currentRevision"], status["currentReplicas"], status["updatedReplicas"]) == (update, 4, 4)


def test_ordinals_below_the_partition_keep_the_current_revision_even_when_made_again():
    sim, deleted = started(db(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))
    current = sim.get("StatefulSet", "default/db").status["currentRevision"]
    change_template(sim)
    sim.run()
    status = sim.get("StatefulSet", "default/db").status
    update = status["updateRevision"]
    assert deleted == ["db-3", "db-2"]
    assert revisions(sim) == {"db-0": current, "db-1": current, "db-2": update, "db-3": update}
    assert (status["currentRevision"], status["currentReplicas"], status["updatedReplicas"]) == (current, 2, 2)
    sim.cluster.delete("Pod", "db-0", "default")
    sim.run()
    assert revisions(sim)["db-0"] == current and sim.pod("db-0").spec.containers[0].image != "app:2"


def test_on_delete_replaces_nothing_until_a_pod_is_deleted():
    sim, deleted = started(db(updateStrategy={"type": "OnDelete"}))
    change_template(sim)
    sim.run()
    assert deleted == [] and sim.get("StatefulSet", "default/db").status.get("updatedReplicas", 0) == 0
    sim.cluster.delete("Pod", "db-1", "default")
    sim.run()
    update = sim.get("StatefulSet", "default/db").status["updateRevision"]
    assert revisions(sim)["db-1"] == update and sim.pod("db-1").spec.containers[0].image == "app:2"
    assert sum(1 for r in revisions(sim).values() if r == update) == 1


def test_max_unavailable_replaces_that_many_at_once():
    sim, deleted = started(db(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}),
                           start_delay="10s")
    change_template(sim)
    sim.run_for(5)
    assert deleted == ["db-3", "db-2"]
    sim.run()
    assert sorted(deleted) == ["db-0", "db-1", "db-2", "db-3"]


@pytest.mark.parametrize("strategy, message", [
    ({"type": "OnDelete", "rollingUpdate": {"partition": 1}},
     'spec.updateStrategy.rollingUpdate: Invalid value: {"partition":1}: only allowed for updateStrategy '
     "'RollingUpdate'"),
    ({"type": "Sometimes"}, "spec.updateStrategy: Invalid value: {\"type\":\"Sometimes\"}: must be 'RollingUpdate' or "
                            "'OnDelete'"),
    ({"type": "RollingUpdate", "rollingUpdate": {"partition": -1}},
     "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
     "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: must be greater than 0"),
])
def test_the_api_server_refuses_a_bad_update_strategy(strategy, message):
    assert message in problems(db(updateStrategy=strategy))
