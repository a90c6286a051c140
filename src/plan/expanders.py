"""Choosing among node templates as cluster-autoscaler's expanders do (``--expander``).

Each round of a scale-up plan estimates, for every template, how many of its
nodes the pending pods need and which pods they take (an :class:`Option`); an
expander picks one.  Mirrors cluster-autoscaler's ``expander/waste``,
``expander/price`` and ``expander/priority`` with templates' own annotations
in place of a cloud provider's prices and a priority ConfigMap, and with
deterministic tie-breaks where cluster-autoscaler draws at random.
"""

from __future__ import annotations

from typing import Callable, Sequence

import attrs

from .templates import NodeTemplate


@attrs.frozen
class Option:
    """One template's estimate: ``count`` nodes of ``template`` take the pending
    pods ``pods`` (``namespace/name``), which request ``cpu`` milli-CPU and
    ``memory`` bytes in all."""

    template: NodeTemplate
    count: int
    pods: tuple[str, ...]
    cpu: int = 0
    memory: int = 0

    @property
    def cost_per_hour(self) -> float:
        """``count`` x the template's cost per hour."""
        return self.count * self.template.cost_per_hour

    @property
    def waste(self) -> float:
        """cluster-autoscaler's least-waste score: the unrequested fraction of the
        new nodes' CPU plus that of their memory (0 = full, 2 = empty)."""
        allocatable = self.template.node.status.allocatable
        cpu = allocatable.get("cpu", 0) * self.count
        memory = allocatable.get("memory", 0) * self.count
        return ((cpu - self.cpu) / cpu if cpu else 0.0) + ((memory - self.memory) / memory if memory else 0.0)


def least_waste(options: Sequence[Option]) -> Option:
    """The option leaving the least CPU and memory unrequested on its new nodes
    (``expander/waste``); ties: more pods placed, then the template's name."""
    return min(options, key=lambda o: (round(o.waste, 9), -len(o.pods), o.template.name))


def price(options: Sequence[Option]) -> Option:
    """The option with the lowest cost per hour per pod it places.  cluster-autoscaler's
    ``expander/price`` weighs a node group's price against the price of the pods'
    requests with a preferred-node-size penalty; here the templates' own
    ``kubesched.io/cost-per-hour`` is the price.  Ties: least waste."""
    return min(options, key=lambda o: (round(o.cost_per_hour / len(o.pods), 9), round(o.waste, 9),
                                       o.template.name))


def priority(options: Sequence[Option]) -> Option:
    """The option whose template has the highest ``kubesched.io/priority``
    (``expander/priority``); ties: least waste (cluster-autoscaler draws at random)."""
    best = max(o.template.priority for o in options)
    return least_waste([o for o in options if o.template.priority == best])


#: ``--expander`` name -> the expander.
EXPANDERS: dict[str, Callable[[Sequence[Option]], Option]] = {
    "least-waste": least_waste,
    "price": price,
    "priority": priority,
}
