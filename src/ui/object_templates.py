"""Starting points for a new object in the what-if editor: a small valid manifest per kind a person
most often adds to a scenario, to edit before applying (names end in ``-new``)."""

from __future__ import annotations

import yaml

#: kind -> a manifest that applies as it is (an object to add to the scenario).
TEMPLATES: dict[str, dict] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-new", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                     "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}},
    "Node": {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "node-new", "labels": {"kubernetes.io/hostname": "node-new"}},
             "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}]}},
    "PriorityClass": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": "priority-new"}, "value": 1000,
                      "preemptionPolicy": "PreemptLowerPriority"},
    "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "namespace-new"}},
    "PersistentVolumeClaim": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                              "metadata": {"name": "data-new", "namespace": "default"},
                              "spec": {"accessModes": ["ReadWriteOnce"],
                                       "resources": {"requests": {"storage": "10Gi"}}}},
}


def template_text(kind: str) -> str:
    """The YAML of :data:`TEMPLATES`' ``kind`` ("" for a kind without a template)."""
    manifest = TEMPLATES.get(kind)
    return yaml.safe_dump(manifest, sort_keys=False) if manifest is not None else ""
