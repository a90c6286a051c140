"""CEL errors: an expression that does not compile, and one whose evaluation fails."""

from __future__ import annotations


class CelError(Exception):
    """Base class: ``message`` is the upstream-like text, ``expression`` the source."""

    def __init__(self, message: str, expression: str = ""):
        super().__init__(message)
        self.message = message
        self.expression = expression


class CelCompileError(CelError):
    """The expression cannot be compiled: too long, a syntax error, an undeclared
    function or variable, an unknown ``device`` field, an invalid regex literal
    or a result that cannot be bool.  The allocator reports it as
    ``CEL compile error: <message>``; it is fatal for the allocation."""


class CelCostError(CelCompileError):
    """The expression's worst-case cost, estimated before it is stored, is over
    upstream's ``CELSelectorExpressionMaxCost`` (:mod:`.cost`); the API server
    refuses the object with ``Forbidden: too complex, exceeds cost limit``."""


class CelRuntimeError(CelError):
    """Evaluating the expression for one device failed (``no such key: model``,
    ``no such overload``, a non-bool result, ...).  Upstream treats it as fatal
    for the allocation (``CEL runtime error: <message>``), never as "no match"."""

    #: Advice the allocator appends to ``no such key`` errors (upstream's ``EnhanceRuntimeError``).
    MISSING_KEY_HINT = (
        "consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )

    @property
    def is_missing_key(self) -> bool:
        """True for ``no such key: ...``: the allocator then adds :attr:`MISSING_KEY_HINT`."""
        return self.message.startswith("no such key")


