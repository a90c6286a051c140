"""Status: what a plugin returns at an extension point, with upstream's codes."""

from __future__ import annotations

import enum

from attrs import field, frozen


class Code(enum.IntEnum):
    """Upstream's status codes, same values and names.

    SUCCESS: the plugin ran and the pod may go on.  ERROR: an internal error;
    the pod is retried after backoff, no plugin is blamed.  UNSCHEDULABLE: the
    pod does not fit; PostFilter (preemption) may help.
    UNSCHEDULABLE_AND_UNRESOLVABLE: does not fit and preemption cannot help on
    this node.  WAIT: Permit says wait.  SKIP: PreFilter/PreScore say "my
    Filter/Score has nothing to do for this pod"; Bind says "not my pod".
    PENDING: the pod waits for something external; requeued without backoff.
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _UPSTREAM_NAMES[self]


_UPSTREAM_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@frozen
class Status:
    """The result of a plugin call.  ``None`` stands for Success everywhere a
    Status is returned, as a nil ``*Status`` does upstream.

    ``reasons`` are the human-readable reasons ("Insufficient cpu"); ``plugin``
    is filled in by the framework with the plugin that produced a rejection.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = field(default=None, eq=False)

    @classmethod
    def unschedulable(cls, *reasons: str) -> "Status":
        """Code Unschedulable with ``reasons`` (upstream ``NewStatus(Unschedulable, ...)``)."""
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> "Status":
        """Code UnschedulableAndUnresolvable with ``reasons``: preemption cannot help on this node."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def as_error(cls, error: BaseException | str) -> "Status":
        """Code Error carrying ``error`` (a string becomes a RuntimeError) (upstream ``AsStatus``)."""
        if isinstance(error, str):
            error = RuntimeError(error)
        return cls(Code.ERROR, (str(error),), error=error)

    @classmethod
    def skip(cls) -> "Status":
        """The shared Skip status."""
        return SKIP

    def is_success(self) -> bool:
        """Whether the code is Success (None, the usual Success, is not a Status: see :func:`is_success`)."""
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def is_skip(self) -> bool:
        """Whether the code is Skip."""
        return self.code == Code.SKIP

    def message(self) -> str:
        """The reasons joined with ", " (upstream's ``Status.Message()``)."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> "Status":
        """This status attributed to ``plugin`` (upstream ``Status.WithPlugin``)."""
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin, self.error)


SKIP = Status(Code.SKIP)


def is_success(status: Status | None) -> bool:
    """True for ``None`` and for a Success status."""
    return status is None or status.code == Code.SUCCESS
