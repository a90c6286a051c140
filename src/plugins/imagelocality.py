"""ImageLocality: prefer nodes that already hold the pod's container images
(upstream plugins/imagelocality).

A node's score sums, over the pod's init and regular containers whose image
(``:latest`` added to an untagged name) the node lists in
``status.images``, the image size scaled by the fraction of nodes that hold
it (an image everywhere counts fully, an image on one node of a hundred
barely: spreading it is no gain).  The sum is clamped to [23 MiB, 1000 MiB x
containers] and mapped linearly onto 0-100.  No NormalizeScore.
"""

from __future__ import annotations

import numpy as np

from kubesched import IMAGE_NAMES_SIGNER, MAX_NODE_SCORE, NodeInfo, Status, hookimpl

MB = 1024 * 1024
#: Below this sum a node scores 0 (bytes).
MIN_THRESHOLD = 23 * MB
#: Per container, above this sum a node scores 100 (bytes).
MAX_CONTAINER_THRESHOLD = 1000 * MB
STATE_KEY = "PreScoreImageLocality"


def normalized_image_name(name: str) -> str:
    """``name`` with ``:latest`` added when it carries no tag (upstream ``normalizedImageName``)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _image_size(name: str):
    def extract(info: NodeInfo) -> int:
        for image in info.require_node().status.images:
            if name in image.names:
                return image.size_bytes
        return -1
    return extract


def _has_images(info: NodeInfo) -> int:
    return len(info.node.status.images) if info.node is not None else 0


class ImageLocality:
    """PreScore (Skip when no node reports ``status.images``) and Score: 0-100 from the sizes (bytes) of the pod's
    images already on the node, scaled by how widely each is spread (upstream plugin ImageLocality; see the module
    doc)."""

    name = "ImageLocality"

    def __init__(self, args, handle):
        self.handle = handle

    @staticmethod
    def _images(pod) -> list[str]:
        return [normalized_image_name(c.image) for c in (*pod.spec.init_containers, *pod.spec.containers)]

    @hookimpl
    def sign_pod(self, pod):
        """Score reads the pod's images, by their normalized names."""
        return [(IMAGE_NAMES_SIGNER, tuple(sorted(self._images(pod))))]

    @hookimpl
    def pre_score(self, state, pod, nodes):
        if not np.count_nonzero(self.handle.snapshot.table.column("images", _has_images, of_node=True)):
            return Status.skip()  # no node reports images: every node would score 0
        return None

    def _scores(self, pod, table, rows) -> np.ndarray:
        total = len(table)
        images = self._images(pod)
        summed = np.zeros(len(rows), dtype=np.float64)
        for image in images:
            sizes = table.column(f"image/{image}", _image_size(image), of_node=True)
            present = sizes >= 0
            holders = int(np.count_nonzero(present))
            if not holders:
                continue
            picked = sizes[rows]
            summed += np.where(picked >= 0, picked.astype(np.float64) * holders / total, 0.0)
        clipped = np.clip(np.trunc(summed).astype(np.int64), MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * len(images))
        top = MAX_CONTAINER_THRESHOLD * len(images)
        return MAX_NODE_SCORE * (clipped - MIN_THRESHOLD) // (top - MIN_THRESHOLD)

    @hookimpl
    def score(self, state, pod, node_info):
        snapshot = self.handle.snapshot
        return int(self._scores(pod, snapshot.table, np.array([snapshot.index[node_info.name]]))[0])

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        return self._scores(pod, table, np.asarray(rows))
