"""Issue 35's GPU gang preemption through `kubesched run` against the strict fake API server (a real client, the
service account of deploy/rbac.yaml, graceful deletion): on 2 nodes with 2 GPUs each, a running gang of 4 (one
GPU per member from a ResourceClaimTemplate, minCount 4) and an arriving gang of 4 at priority 1000 that needs
every GPU - the low gang is evicted whole and the high gang binds 4 of 4."""

from __future__ import annotations

from pathlib import Path

from fake_apiserver import SERVICE_ACCOUNT_TOKEN, FakeAPIServer
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.framework.config import load_config
from kubesched.drivers.daemon import Daemon
from kubesched.plugins import DEFAULT_PLUGINS
from plugins.test_podgroup_preemption_devices import gang, gpu_nodes
from test_daemon import Running, scheduler_config, stop_daemons_left_running  # noqa: F401 (autouse)

RBAC = Path(__file__).resolve().parents[1] / "deploy" / "rbac.yaml"


def test_the_low_gang_is_evicted_whole_and_the_high_gang_binds_4_of_4(tmp_path):
    with FakeAPIServer(rbac=RBAC) as apiserver:
        pool = apiserver.cluster
        for obj in [*gpu_nodes(2), *gang("low", 4, priority=0)]:
            pool.create(obj)

        def members(prefix: str) -> list:
            return [p for p in pool.list("Pod").items if p.metadata.name.startswith(prefix)]

        def bound(prefix: str) -> dict[str, str]:
            return {p.metadata.name: p.spec.node_name for p in members(prefix) if p.spec.node_name}

        cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kc", SERVICE_ACCOUNT_TOKEN),
                                                    qps=0, backoff_factor=0.01, watch_backoff=(0.01, 0.1))
        config = load_config(scheduler_config(scheduler_name="default-scheduler"), DEFAULT_PLUGINS)
        running = Running(Daemon(cluster, config, embedded=False, identity="gangs", port=None))
        apiserver.wait_until(lambda: len(bound("low-")) == 4, timeout=30)
        assert sorted(bound("low-").values()) == ["n0", "n0", "n1", "n1"]
        for obj in gang("high", 4, priority=1000):
            pool.create(obj)
        # every victim terminating (the kubelets' part is finish_terminating_pods), none spared
        apiserver.wait_until(lambda: all(p.metadata.deletion_timestamp for p in members("low-")), timeout=30)
        assert len(members("low-")) == 4
        apiserver.finish_terminating_pods()
        apiserver.wait_until(lambda: len(bound("high-")) == 4, timeout=60)
        assert members("low-") == []
        assert sorted(bound("high-").values()) == ["n0", "n0", "n1", "n1"]
        assert running.stop() == 0  # its events flushed
        preempted = {e["regarding"]["name"] for e in apiserver.events.values() if e.get("reason") == "Preempted"}
        assert preempted == {f"low-{i}" for i in range(4)}
