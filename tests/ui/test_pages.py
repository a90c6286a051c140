"""The pages of `kubesched ui` as a person reads them, over HTTP from a running server."""

from __future__ import annotations

import json
import re

import yaml

from .helpers import ROOT, get, serving, text, write_gangs


def _nodes(count: int) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n-{i:03d}", "labels": {"kubernetes.io/hostname": f"n-{i:03d}"}},
         "status": {"allocatable": {"cpu": str(1 + i % 7), "memory": "8Gi", "pods": "110"}}} for i in range(count)]}


def test_the_cluster_page_sorts_and_pages_the_node_table_and_draws_one_grid(tmp_path):
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(_nodes(250)))
    with serving([tmp_path]) as (_, server):
        first = get(server, "/")
        rows = re.findall(r'<tr>\s*<td><a href="/node/(n-\d+)">', first)
        assert rows == [f"n-{i:03d}" for i in range(100)]  # a page, not 250 rows
        assert "page 1 of 3" in text(first)
        assert first.count("<canvas") == 1 and re.search(r'"names": \["n-000", "n-001"', first)
        last = get(server, "/?page=3")
        assert re.findall(r'<tr>\s*<td><a href="/node/(n-\d+)">', last)[0] == "n-200"
        biggest = get(server, "/?sort=cpu&desc=1")  # every node is empty: ties keep the name order
        assert re.findall(r'<tr>\s*<td><a href="/node/(n-\d+)">', biggest)[0] == "n-000"
        filtered = text(get(server, "/?q=n-24"))
        assert "10 node(s)" in filtered


def test_a_scheduled_pods_page_shows_the_score_breakdown_and_the_binding():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        page = get(server, "/pod/shop/web-1")
        node = runs.current().pod_by_key["shop/web-1"].spec.node_name
        assert f"Scheduled on {node}" in text(page)
        chosen = re.search(r'<tr class="chosen"><td><a href="/node/([^"]+)">', page)
        assert chosen and chosen.group(1) == node
        assert "NodeResourcesFit ×1" in page and "TaintToleration ×3" in page
        assert re.search(rf"Bound on {node} at \+[0-9.]+s", text(page))


def test_the_node_page_lists_its_pods_and_offers_the_allocatable_form():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        page = get(server, "/node/gpu-b3")
        assert "nvidia.com/gpu=present:NoSchedule" in text(page)
        assert 'name="allocatable.nvidia.com/gpu" value="1"' in page
        on_node = sorted(p.key for p in runs.current().pods if p.spec.node_name == "gpu-b3")
        assert re.findall(r'<td><a href="/pod/([^"]+)">', page) == on_node
        assert "Node nope: not found" in text(get(server, "/node/nope", status=404))


def test_the_devices_page_shows_who_holds_each_device_and_why_a_claim_found_none():
    with serving([ROOT / "examples/dra"]) as (runs, server):
        page = text(get(server, "/devices"))
        outcome = runs.current()
        resnet = outcome.pod_by_key["ml/train-resnet"]
        claim = f"ml/{resnet.status.resource_claim_statuses[0].resource_claim_name}"
        # the allocated devices, their claim and its pod
        assert re.search(rf"h100-1 h100-1 gpu.example.com gpu-0 .* {claim} ml/train-resnet", page)
        # finetune-llm's claim: the A100s fail its selector, the H100s that match are held by train-resnet's claim
        assert "waiting: ml/finetune-llm" in page
        assert ("9 device(s): request selector is false: "
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('80Gi')) >= 0") in page
        assert f"2 device(s): matches, held by claim {claim}" in page


def test_the_timeline_marks_timed_changes_and_shows_the_cluster_at_t():
    from kubesched.ui.scenario import TimedChange

    changes = [TimedChange(60, ROOT / "examples/device-taints/taint-gpu-b.yaml"),
               TimedChange(120, ROOT / "examples/device-taints/train-0.yaml")]
    with serving([ROOT / "examples/device-taints/cluster"], changes=changes) as (runs, server):
        page = get(server, "/timeline")
        assert '"--at 60s=taint-gpu-b.yaml"' in page and '"--at 120s=train-0.yaml"' in page
        # devices per DeviceClass beside cpu and memory: train-0's GPUs freed by the eviction, held again after
        series = json.loads(re.search(r'id="timeline-data">(.*?)</script>', page).group(1))
        assert series["times"] == [0.0, 60.0, 120.0]
        assert series["allocated"]["devices/gpu.example.com"] == [50.0, 16.67, 50.0]
        start = text(get(server, "/timeline/state?t=0"))
        after_eviction = text(get(server, "/timeline/state?t=90"))
        assert "At T = +0.0s" in start and "At T = +90.0s" in after_eviction
        assert "created default/train-0" in start
        bound_at_start = int(re.search(r"(\d+) bound on", start).group(1))
        bound_after = int(re.search(r"(\d+) bound on", after_eviction).group(1))
        assert bound_after == bound_at_start - 1  # train-0 evicted by the NoExecute taint at 60s
        assert "deleted default/train-0 gpu-b" in after_eviction


def test_the_config_diff_shows_effective_profiles_and_runs_the_other_side():
    with serving([ROOT / "examples/cluster"], compare=["configs/bin-packing.yaml"]) as (_, server):
        page = get(server, "/config?other=configs/bin-packing.yaml:bin-packing-scheduler&run=1")
        differing = re.findall(r'<tr class="differs"><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>',
                               page)
        fit = [row for row in differing if row[1] == "NodeResourcesFit args"]
        assert fit and "MostAllocated" in fit[0][3] and "LeastAllocated" not in fit[0][3]
        assert "Pods placed differently" in page and "nodesInUse" in page
        missing = get(server, "/config?other=configs/bin-packing.yaml:nope")
        assert 'class="error">configs/bin-packing.yaml: profiles: no profile with schedulerName' in missing


def test_the_podgroups_page_shows_a_waiting_gang_its_racks_and_the_member_that_did_not_fit(tmp_path):
    write_gangs(tmp_path)
    with serving([tmp_path]) as (_, server):
        page = text(get(server, "/podgroups"))
        big = page[page.index("ml/big gang"):page.index("ml/small gang")]
        small = page[page.index("ml/small gang"):]
        assert "minCount 3" in big and "3 member(s): 0 placed, 3 waiting · minCount not met (0 of 3)" in big
        assert "PodGroupInitiallyScheduled=False (Unschedulable): 0/3 placements are available" in big
        # every rack tried: two members fit in racks 2 and 3, the third lacks 2 CPUs on each node there
        assert ("rack-2 2 2 of 3 GangScheduling: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining "
                "2 member(s) placed in rack-2, then ml/big-2 did not fit: 2 of the 3 needed "
                "ml/big-2 : 2 nodes: Insufficient cpu r2-n1 lacks 2 cpu r2-n2 lacks 2 cpu") in big
        assert "rack-1 2 0 of 3" in big  # ml/small holds rack 1 (equal racks: the first in name order)
        assert "2 member(s): 2 placed, 0 waiting · minCount met" in small
        assert "zone zone-a rack rack-1 r1-n1 : ml/small-1 r1-n2 : ml/small-0" in small
        assert "Scheduled in rack-1" in small and "rack-1 (chosen)" in small


def test_the_gang_example_shows_the_waiting_group_its_racks_and_the_incomplete_one():
    with serving([ROOT / "examples/gangs"]) as (_, server):
        page = text(get(server, "/podgroups"))
        finetune = page[page.index("ml/llm-finetune gang"):page.index("ml/llm-pretrain gang")]
        assert "4 member(s): 0 placed, 4 waiting · minCount not met (0 of 4)" in finetune
        assert re.search(r"rack-b 2 2 of 4 GangScheduling: minCount \(4\) cannot be satisfied", finetune)
        pretrain = page[page.index("ml/llm-pretrain gang"):]
        assert "minCount met" in pretrain and "rack rack-a" in pretrain and "rack-a (chosen)" in pretrain
        evaluation = page[page.index("ml/eval gang"):page.index("ml/llm-finetune gang")]
        assert "waits at PreEnqueue: GangScheduling: waiting for minCount pods from a gang" in evaluation


def test_a_podgroups_preemption_shows_on_its_page_its_victims_group_and_pages_and_the_timeline():
    from typer.testing import CliRunner

    from kubesched.cli import app
    from kubesched.ui.scenario import TimedChange

    arrival = TimedChange(300.0, ROOT / "examples/gangs-arrivals/urgent-pretrain.yaml")
    with serving([ROOT / "examples/gangs"], changes=[arrival]) as (runs, server):
        page = get(server, "/pod/ml/llm-pretrain-worker-1")
        assert "No longer in the cluster: preempted at +300s by podgroup/ml/urgent-pretrain" in text(page)
        assert 'href="/podgroups#ml/urgent-pretrain"' in page and 'id="ml/urgent-pretrain"' in get(server, "/podgroups")
        assert "Attempt 1" in text(page) and "deleted" in text(page)
        groups = text(get(server, "/podgroups"))
        pretrain = groups[groups.index("ml/llm-pretrain gang"):groups.index("ml/urgent-pretrain gang")]
        urgent = groups[groups.index("ml/urgent-pretrain gang"):]
        assert "minCount not met (0 of 4): its members were preempted (below)" in pretrain
        assert "ml/llm-pretrain-worker-1 +300.0s podgroup/ml/urgent-pretrain" in pretrain
        explained = json.loads(CliRunner().invoke(app, [
            "explain", "podgroup/ml/urgent-pretrain", "-f", str(ROOT / "examples/gangs"), "--at",
            f"5m={ROOT / 'examples/gangs-arrivals/urgent-pretrain.yaml'}", "-o", "json"]).output)
        victims = explained["preemption"]["victims"]
        assert f"Preempted to make room: attempt #1 at +300.0s (DefaultPreemption) 4 victim(s): {' '.join(victims)}" \
            in urgent
        timeline = text(get(server, "/timeline?t=300"))
        assert all(f"preempted by podgroup/ml/urgent-pretrain {victim}" in timeline for victim in victims)


def test_a_gangs_members_tell_one_story_the_same_as_explain_and_name_their_podgroup():
    from typer.testing import CliRunner

    from kubesched.cli import app

    with serving([ROOT / "examples/gangs"]) as (runs, server):
        explained = json.loads(CliRunner().invoke(app, ["explain", "podgroup/ml/llm-finetune", "-f",
                                                        str(ROOT / "examples/gangs"), "-o", "json"]).output)
        verdict = f"PodGroup ml/llm-finetune (0 of minCount 4 placed): {explained['last']['message']}"
        cluster = text(get(server, "/"))
        # one row per cause in the pending summary: the gang's four members under its verdict, eval's two at PreEnqueue
        assert f"{verdict} 4 " in cluster and "cannot allocate all claims 1" not in cluster
        for member in ("worker-0", "worker-1", "worker-3"):
            page = get(server, f"/pod/ml/llm-finetune-{member}")
            assert f"Pending : {verdict}" in text(page)
            assert 'Member of PodGroup <a href="/podgroups#ml/llm-finetune">ml/llm-finetune</a>' in page
            assert explained["suggestions"][0] in text(page)
        groups = text(get(server, "/podgroups"))
        # placed of minCount as the CLI counts them, and upstream's verdict glossed beside it
        assert "rack-b 2 2 of 4 GangScheduling: minCount (4) cannot be satisfied: 2 scheduled, 1 remaining 2 member(s) " \
               "placed in rack-b, then ml/llm-finetune-worker-2 did not fit and 1 more were not tried: 2 of the 4 " \
               "needed" in groups
        assert [(p["name"], p["placed"], p["minCount"]) for p in explained["placements"]] == [
            ("rack-a", 0, 4), ("rack-b", 2, 4), ("rack-c", 0, 4)]


def test_devices_per_device_class_stand_beside_cpu_and_memory_on_the_cluster_and_node_pages():
    with serving([ROOT / "examples/dra"]) as (runs, server):
        cluster = text(get(server, "/"))
        assert "devices/gpu.example.com 81.8%" in cluster  # 9 of 11 GPUs held
        assert "a100-2 3 37.5% 12 / 32 31.2% 80Gi / 256Gi 60.0% 3 / 5" in cluster
        assert '"resource": "devices/gpu.example.com"' in get(server, "/?grid=devices/gpu.example.com")
        node = get(server, "/node/a100-1")
        assert "devices/gpu.example.com 100.0% 4 4" in text(node)
        assert 'name="allocatable.devices/' not in node  # devices are not the node's allocatable to edit


def test_the_objects_page_lists_namespaces_priority_and_storage_classes_volumes_and_claims():
    with serving([ROOT / "examples/stateful"]) as (runs, server):
        page = get(server, "/objects")
        shown = text(page)
        assert "Namespaces (1) namespace pods default 9" in shown
        assert "local-ssd kubernetes.io/no-provisioner WaitForFirstConsumer Delete" in shown
        assert "local-b1-200g 200Gi local-ssd ReadWriteOnce Bound default/data-db-0" in shown
        assert "default/legacy-data 1Gi manual Pending" in shown
        assert 'href="/whatif?kind=PersistentVolumeClaim&key=default/data-db-0"' in page
    with serving([ROOT / "examples/preemption"]) as (runs, server):
        classes = text(get(server, "/objects"))
        values = [c.value for c in sorted(runs.current().sim.cluster.list("PriorityClass").items, key=lambda c: -c.value)]
        assert f"PriorityClasses ({len(values)})" in classes and "PreemptLowerPriority" in classes
