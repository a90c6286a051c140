"""CEL device selectors for Dynamic Resource Allocation.

The public API does not depend on the engine underneath (cel-python, module
``celpy``, evaluated with its tree-walking interpreter: its compiled runner
writes module globals on every evaluation, so it is not thread-safe; and it
looks methods up by bare name, so overloads that share a name, such as
``isGreaterThan`` of Quantity and Semver, are one function dispatching on
type in ``library``)::

    selector = compile('device.driver == "gpu.example.com" && '
                       'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
    selector.matches(view)          # -> bool; raises CelRuntimeError

where ``view`` is a :class:`kubesched.core.dra.selectors.DeviceView` (the DRA
side: it converts a ResourceSlice device, and its ``SelectorCache`` memoises
results per device).  This package imports no API types.

Modules: ``errors``, ``values`` (Quantity, Semver, optional values),
``library`` (the function library), ``parser``, ``checker`` (compile-time
checks), ``cost`` (the worst-case cost estimate a selector must stay under,
as the API server's) and ``evaluator`` (compile, the compiled-expression
cache, evaluation).

The environment mirrors the one Kubernetes builds for DRA selectors (upstream
``dynamic-resource-allocation/cel``, "stored expressions" flavour, i.e. every
field and library of the newest version regardless of feature gates):

- one variable, ``device``, with the fields ``driver`` (string),
  ``attributes`` (map domain -> map id -> value), ``capacity`` (map domain ->
  map id -> Quantity) and ``allowMultipleAllocations`` (bool).  Attribute and
  capacity names without a domain are put under the driver's name; values are
  int, bool, string, :class:`Semver` (version attributes) or lists of those
  (list-type attributes).  Looking up a domain the device does not have gives
  an **empty map** (so ``has(device.attributes["x.com"].model)`` is false), an
  unknown name inside a domain is the runtime error ``no such key: <name>``;
- the Kubernetes quantity library (``quantity``, ``isQuantity``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``mul``, ``asInteger``,
  ``isInteger``, ``asApproximateFloat``, ``sign``) and semver library
  (``semver(s[, normalize])``, ``isSemver``, ``major``, ``minor``, ``patch``
  and the comparisons);
- cel-go's string extension (``charAt``, ``indexOf``, ``lastIndexOf``,
  ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
  ``trim``, ``join``, ``reverse``, ``format``, ``strings.quote``), sets
  (``sets.contains``, ``sets.intersects``, ``sets.equivalent``), Kubernetes
  lists (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
  ``lastIndexOf``) and regex (``matches``, ``find``, ``findAll``, RE2 syntax),
  ``includes`` (list-type attributes);
- ``cel.bind(name, init, expr)`` and optional values (``x.?field``,
  ``m[?key]``, ``optional.of/none/ofNonZeroValue``, ``hasValue``, ``value``,
  ``orValue``, ``or``).  celpy has neither: ``cel.bind`` is evaluated as a
  macro by our evaluator, and the optional syntax is added to celpy's own Lark
  grammar (two extra ``member`` alternatives) when the parser is built.

Compile-time checks (celpy has no type checker): the 10 KiB length limit,
syntax, undeclared functions and variables, unknown ``device`` fields, macro
shapes, invalid regular-expression literals and an obviously non-bool result
type.  Everything else surfaces at evaluation as :class:`CelRuntimeError`,
including a non-bool result; an error is never turned into "no match".
At load, the API server's static worst-case cost estimate (``cost``) refuses a
selector over upstream's 1,000,000, and a syntax tree deeper than the
interpreter can evaluate (``evaluator.MAX_NESTING``) is refused too.  Each
evaluation has a cost budget (:data:`MAX_COST`, upstream's 1,000,000) counted
in the estimate's units (one per operation and iteration, one per ten
characters or elements produced), so an accepted selector never runs out of
it; over it, evaluation stops with cel-go's "operation cancelled: actual cost
limit exceeded".  As this interpreter is ~1,000x slower per unit than cel-go,
each evaluation is also bounded in wall-clock time
(:data:`MAX_EVALUATION_SECONDS`, 1 s: "operation cancelled: evaluation time
limit exceeded (1s)", a runtime error too); inside :func:`abort_when` it also stops when the caller's
deadline passes (:class:`EvaluationAborted`).  Not implemented: cel-go's static
overload resolution, the Kubernetes URL/IP/CIDR/authz/format-of-time libraries
and two-variable comprehensions.
"""

from typing import TYPE_CHECKING, Any

from .errors import CelCompileError, CelCostError, CelError, CelRuntimeError

if TYPE_CHECKING:
    from .cost import MAX_ESTIMATED_COST
    from .evaluator import (
        COMPILE_CACHE_SIZE,
        COST_LIMIT_EXCEEDED,
        MAX_COST,
        MAX_EVALUATION_SECONDS,
        MAX_EXPRESSION_LENGTH,
        TIME_LIMIT_EXCEEDED,
        CelDevice,
        CompiledSelector,
        EvaluationAborted,
        abort_when,
        compile,
        compile_cache_info,
    )
    from .values import Quantity, Semver

#: The names loaded with the engine (cel-python, Lark: ~0.1 s of imports) on first use, so a process that
#: compiles no selector (a simulation without DRA) never imports it; the errors above are plain classes.
_LAZY = {
    "MAX_ESTIMATED_COST": "cost",
    **{name: "evaluator" for name in (
        "COMPILE_CACHE_SIZE", "COST_LIMIT_EXCEEDED", "MAX_COST", "MAX_EVALUATION_SECONDS", "MAX_EXPRESSION_LENGTH",
        "TIME_LIMIT_EXCEEDED", "CelDevice", "CompiledSelector", "EvaluationAborted", "abort_when", "compile",
        "compile_cache_info")},
    "Quantity": "values",
    "Semver": "values",
}


def __getattr__(name: str) -> Any:
    """The engine's names (:data:`_LAZY`), imported from their module when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "COMPILE_CACHE_SIZE",
    "COST_LIMIT_EXCEEDED",
    "EvaluationAborted",
    "MAX_COST",
    "MAX_EVALUATION_SECONDS",
    "TIME_LIMIT_EXCEEDED",
    "abort_when",
    "MAX_EXPRESSION_LENGTH",
    "CelCompileError",
    "CelCostError",
    "MAX_ESTIMATED_COST",
    "CelDevice",
    "CelError",
    "CelRuntimeError",
    "CompiledSelector",
    "Quantity",
    "Semver",
    "compile",
    "compile_cache_info",
]
