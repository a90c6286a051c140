"""kubesched: the Kubernetes scheduling framework in Python.

What a plugin author needs::

    from kubesched import hookimpl, Status, Code

    class MyScore:
        name = "MyScore"
        def __init__(self, args, handle): ...
        @hookimpl
        def score(self, state, pod, node_info): return 42

announced in the entry-point group ``kubesched.plugins`` of its package.
"""

from .core.framework.cycle_state import CycleState
from .core.framework.handle import Handle
from .core.framework.hookspecs import hookimpl
from .core.framework.nodeinfo import NodeInfo, PodInfo
from .core.framework.status import Code, Status
from .core.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PostFilterResult,
    PreBindWait,
    PreFilterResult,
    QueueingHint,
)

__version__ = "0.1.0"

__all__ = [
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Handle",
    "NodeInfo",
    "PodInfo",
    "PostFilterResult",
    "PreBindWait",
    "PreFilterResult",
    "QueueingHint",
    "Status",
    "hookimpl",
]
