"""The web application of ``kubesched ui``: Starlette routes, Jinja2 pages, server-sent events.

Every view is a GET address (its permalink; links and forms go through
htmx's boost, which keeps the address bar on the view shown).  Edits are
POSTs that return to the page they came from while the
:class:`~kubesched.ui.runs.Runs` worker re-simulates; ``/events`` streams
the state (``event: state``, JSON data) at once and after every change, and
the page's script asks htmx to refresh the main view and the changes panel
when a newer outcome is ready.  Static files (htmx, uPlot and their
licences, the page's script and style) are served from the package; nothing
is fetched from elsewhere.

The handlers are module-level functions grouped by page; what they share
(the runs, the templates, the title) is the application's :class:`UiState`,
and :data:`ROUTES` lists every address at a glance.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import quote, urlencode, urlsplit

import attrs
import yaml
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from kubesched.analysis.compare import compare
from kubesched.analysis.explain import quantity
from kubesched.analysis.html_page import html_report
from kubesched.core.api import to_manifest
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.core.quantity import QuantityError, to_scheduler_units
from kubesched.drivers.harness import scheduler_configuration

from .bundle import bundle_zip
from .guard import Guard, allowed_hosts, new_token
from .object_templates import TEMPLATES, template_text
from .outcome import Outcome, placement_diff
from .runs import Runs, simulate
from .scenario import Edit, config_edit, import_edits, object_edit
from .views.cluster import cluster_page, node_page
from .views.configs import effective_profiles, other_configuration, plugin_catalogue, side_by_side
from .views.devices import devices_page
from .views.objects import objects_page
from .views.plan import plan_page
from .views.pod import pod_page
from .views.podgroups import podgroups_page
from .views.timeline import state_at, timeline_page
from .whatif_now import MOVES_SHOWN, WhatIfError, WhatIfNow

HERE = Path(__file__).resolve().parent
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE_SECONDS = 15.0

Handler = Callable[[Request], Awaitable[Response]]


@attrs.frozen
class UiState:
    """What every handler shares, kept as ``app.state.ui``: the :class:`Runs`
    (started by the caller), the page templates, the pages' title,
    ``closing``, set when the server stops (event streams end then), and the
    token every change must carry (:mod:`.guard`; the pages put it in their
    forms and in htmx's headers)."""

    runs: Runs
    templates: Jinja2Templates
    title: str
    closing: threading.Event
    token: str
    now: WhatIfNow = attrs.field(factory=WhatIfNow)


def make_templates() -> Jinja2Templates:
    """The Jinja2 templates of ``ui/templates`` with the ``number`` (thousands separators) and ``quantity`` (a
    resource amount as a Kubernetes quantity) filters."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["number"] = _number
    templates.env.filters["quantity"] = lambda amount, resource: quantity(resource, int(amount))
    return templates


def create_app(runs: Runs, port: int, title: str = "kubesched ui", closing: threading.Event | None = None) -> Starlette:
    """The application of :data:`ROUTES` over ``runs`` (started by the caller),
    answering as a loopback server on ``port`` behind :class:`~.guard.Guard`
    (a new token per application).  Event streams end once ``closing`` is set
    and the runs' listeners are called (the server's shutdown does both)."""
    token = new_token()
    app = Starlette(routes=[*(Route(path, handler, methods=list(methods)) for path, handler, methods in ROUTES),
                            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")],
                    middleware=[Middleware(Guard, hosts=allowed_hosts(port), token=token), Middleware(ServerTiming)])
    app.state.ui = UiState(runs, make_templates(), title, closing or threading.Event(), token)
    return app


# --- what the handlers share ------------------------------------------------------------------


def _ui(request: Request) -> UiState:
    return request.app.state.ui


def render(request: Request, template: str, outcome: Outcome | None, status_code: int = 200,
           **context: Any) -> Response:
    """``template`` with the page frame's context (title, run status, this view's address and a ``link``
    to it with other query parameters) and ``context``."""
    ui = _ui(request)

    def link(**changes: Any) -> str:
        """This view's address with the query parameters ``changes`` set (None: removed)."""
        params = {**request.query_params, **{k: v for k, v in changes.items()}}
        query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
        return request.url.path + (f"?{query}" if query else "")

    return ui.templates.TemplateResponse(request, template, {
        "title": ui.title, "status": ui.runs.status(), "outcome": outcome, "link": link, "token": ui.token,
        "url": request.url.path + (f"?{request.url.query}" if request.url.query else ""), **context},
        status_code=status_code)


def over_outcome(view: Callable[[Request, Outcome], Awaitable[Response]]) -> Handler:
    """The handler of a page drawn from the latest outcome: the waiting page while there is none."""
    @functools.wraps(view)
    async def handler(request: Request) -> Response:
        outcome = _ui(request).runs.latest()
        if outcome is None:
            return render(request, "waiting.html", None)
        return await view(request, outcome)
    return handler


def arg(request: Request, name: str, default: str = "") -> str:
    """The query parameter ``name`` (``default`` when absent)."""
    return request.query_params.get(name, default)


def int_arg(request: Request, name: str, default: int = 1) -> int:
    """The query parameter ``name`` as an integer (``default`` when absent or not one)."""
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


# --- the cluster: nodes, a node, a pod -----------------------------------------------------------


@over_outcome
async def cluster(request: Request, outcome: Outcome) -> Response:
    data = cluster_page(outcome, sort=arg(request, "sort", "name"), descending=arg(request, "desc") == "1",
                        page=int_arg(request, "page"), query=arg(request, "q"),
                        pending_page=int_arg(request, "ppage"), grid_resource=arg(request, "grid", "cpu"))
    return render(request, "cluster.html", outcome, nav="cluster", **data)


@over_outcome
async def node(request: Request, outcome: Outcome) -> Response:
    name = request.path_params["name"]
    data = node_page(outcome, name, page=int_arg(request, "page"))
    if data is None:
        return missing(request, outcome, "Node", name)
    return render(request, "node.html", outcome, nav="cluster", **data)


@over_outcome
async def pod(request: Request, outcome: Outcome) -> Response:
    key = f"{request.path_params['namespace']}/{request.path_params['name']}"
    data = pod_page(outcome, key)
    if data is None:
        return missing(request, outcome, "Pod", key)
    return render(request, "pod.html", outcome, nav="cluster", **data)


def missing(request: Request, outcome: Outcome, kind: str, key: str) -> Response:
    """The page of object ``kind``/``key`` that the latest run does not have (404): deleted by a what-if edit
    (named, with undo), or never in the scenario; with a link back to the cluster."""
    edit = _ui(request).runs.history.deleting_edit(kind, key)
    return render(request, "missing.html", outcome, kind=kind, key=key, edit=edit.label if edit is not None else "",
                  status_code=404)


# --- devices, pod groups, the timeline ----------------------------------------------------------


@over_outcome
async def devices(request: Request, outcome: Outcome) -> Response:
    data = await run_in_threadpool(_ui(request).now.reading, devices_page, outcome, int_arg(request, "page"),
                                   int_arg(request, "cpage"))
    return render(request, "devices.html", outcome, nav="devices", **data)


@over_outcome
async def podgroups(request: Request, outcome: Outcome) -> Response:
    data = await run_in_threadpool(_ui(request).now.reading, podgroups_page, outcome, arg(request, "topology"))
    return render(request, "podgroups.html", outcome, nav="podgroups", **data)


@over_outcome
async def plan(request: Request, outcome: Outcome) -> Response:
    runs = _ui(request).runs
    scenario = runs.history.scenario_for(outcome.key) or runs.history.current()
    try:
        data = await run_in_threadpool(plan_page, scenario, runs.features, arg(request, "expander"),
                                       arg(request, "mode"))
    except (InvalidManifest, ConfigError, PluginError) as err:
        data = {"error": str(err)}
    return render(request, "plan.html", outcome, nav="plan", **data)


@over_outcome
async def objects(request: Request, outcome: Outcome) -> Response:
    data = await run_in_threadpool(_ui(request).now.reading, objects_page, outcome)
    return render(request, "objects.html", outcome, nav="objects", **data)


@over_outcome
async def timeline(request: Request, outcome: Outcome) -> Response:
    data = timeline_page(outcome)
    t = _float(arg(request, "t"), data["duration"])
    return render(request, "timeline.html", outcome, nav="timeline", state=state_at(outcome, t), **data)


async def timeline_state(request: Request) -> Response:
    outcome = _ui(request).runs.latest()
    if outcome is None:
        return HTMLResponse("")
    t = _float(arg(request, "t"), outcome.timeline.duration)
    return render(request, "timeline_state.html", outcome, state=state_at(outcome, t))


# --- what-if: the editor, the changes panel, the edits -----------------------------------------


async def whatif(request: Request) -> Response:
    runs = _ui(request).runs
    kind, key = arg(request, "kind"), arg(request, "key")
    scenario = runs.history.current()
    editing = template_text(arg(request, "template"))
    if kind:
        obj = scenario.find(kind, key)
        editing = yaml.safe_dump(to_manifest(obj), sort_keys=False) if obj is not None else ""
    return render(request, "whatif.html", runs.latest(), nav="whatif", kind=kind, key=key, editing=editing,
                  templates=list(TEMPLATES),
                  history=runs.history, config_text=scenario.config_text,
                  plugins=plugin_catalogue(runs.registry), error=arg(request, "error"))


async def changes(request: Request) -> Response:
    runs = _ui(request).runs
    before, after = runs.baseline(), runs.current()
    diff = placement_diff(before, after) if before is not None and after is not None and before is not after else None
    return render(request, "changes.html", after, diff=diff, history=runs.history)


def back(form: Any, error: str = "", default: str = "/whatif") -> Response:
    """After an edit: the page named by the form's ``back`` field when it is
    one of this application's own addresses (``default`` otherwise), or the
    editor showing ``error``.  Never anywhere else: no open redirect."""
    if error:
        return RedirectResponse(f"/whatif?error={quote(error, safe='')}", status_code=303)
    return RedirectResponse(own_address(str(form.get("back", "")), default), status_code=303)


def own_address(target: str, default: str) -> str:
    """``target`` when it is a path of this server (``/...``, no scheme, host,
    ``//`` or backslash, no control character), else ``default``."""
    parts = urlsplit(target)
    if (not target.startswith("/") or target.startswith("//") or parts.scheme or parts.netloc or "\\" in target
            or any(ord(c) < 32 or ord(c) == 127 for c in target)):
        return default
    return target


async def edit_object(request: Request) -> Response:
    form = await request.form()
    try:
        edit = object_edit(str(form.get("label", "")), str(form.get("kind", "")), str(form.get("key", "")),
                           str(form.get("yaml", "")))
        _ui(request).runs.edit(edit)
    except InvalidManifest as err:
        return back(form, str(err))
    return back(form)


async def edit_import(request: Request) -> Response:
    form = await request.form()
    runs = _ui(request).runs
    try:
        for edit in import_edits(str(form.get("name", "")), str(form.get("yaml", ""))):
            runs.edit(edit)
    except InvalidManifest as err:
        return back(form, str(err))
    return back(form)


async def edit_delete(request: Request) -> Response:
    runs = _ui(request).runs
    form = await request.form()
    kind, key = str(form.get("kind", "")), str(form.get("key", ""))
    if runs.history.current().find(kind, key) is None:
        return back(form, f"(edit): {kind}/{key}: no such object in the scenario")
    runs.edit(Edit(f"delete {kind}/{key}", kind, key, None))
    return back(form)


async def edit_node(request: Request) -> Response:
    runs = _ui(request).runs
    name = request.path_params["name"]
    form = await request.form()
    node = runs.history.current().find("Node", name)
    if node is None:
        return back(form, f"(edit): Node/{name}: the node is not in the scenario (created by a timed change?)")
    manifest = to_manifest(node)
    status = manifest.setdefault("status", {})
    allocatable = dict(status.get("allocatable") or {})
    changed = []
    for field, value in form.items():
        if not field.startswith("allocatable.") or not str(value).strip():
            continue
        resource, text = field.removeprefix("allocatable."), str(value).strip()
        try:
            to_scheduler_units(resource, text)
        except (QuantityError, ValueError) as err:
            return back(form, f"(edit): Node/{name}: status.allocatable.{resource}: {err}")
        if allocatable.get(resource) != text:
            allocatable[resource] = text
            changed.append(f"{resource}={text}")
    if "cordon" in form:
        manifest.setdefault("spec", {})["unschedulable"] = form["cordon"] == "1"
        changed.append("cordon" if form["cordon"] == "1" else "uncordon")
    if not changed:
        return back(form, default=f"/node/{quote(name)}")
    status["allocatable"] = allocatable
    try:
        runs.edit(Edit(f"Node/{name}: {', '.join(changed)}", "Node", name, manifest))
    except InvalidManifest as err:
        return back(form, str(err))
    return back(form, default=f"/node/{quote(name)}")


async def edit_config(request: Request) -> Response:
    form = await request.form()
    try:
        runs = _ui(request).runs
        runs.edit(config_edit(str(form.get("yaml", "")), runs.registry))
    except (ConfigError, PluginError) as err:
        return back(form, str(err))
    return back(form)


async def undo(request: Request) -> Response:
    form = await request.form()
    _ui(request).runs.undo()
    return back(form)


async def redo(request: Request) -> Response:
    form = await request.form()
    _ui(request).runs.redo()
    return back(form)


# --- what if, now: changes on the simulated end state, as transactions (no re-simulation) ----------


async def now_page(request: Request) -> Response:
    ui = _ui(request)
    outcome = ui.runs.latest()
    if outcome is None:
        return render(request, "waiting.html", None)
    await run_in_threadpool(ui.now.follow, outcome.key, outcome.sim)
    return render(request, "whatif_now.html", outcome, nav="now", now=ui.now, applied=ui.now.open,
                  node=arg(request, "node"), shown=MOVES_SHOWN, error=arg(request, "error"),
                  pod_yaml=template_text("Pod"))


async def _now_applied(request: Request, apply: Callable[[WhatIfNow, Any], Any]) -> Response:
    """Apply a what-if of the form (``apply(now, form)``) on the latest run's end state, then show /now."""
    ui = _ui(request)
    form = await request.form()
    outcome = ui.runs.latest()
    if outcome is None:
        return RedirectResponse("/now?error=" + quote("(what-if): no run has finished yet", safe=""), 303)
    await run_in_threadpool(ui.now.follow, outcome.key, outcome.sim)
    try:
        await run_in_threadpool(apply, ui.now, form)
    except WhatIfError as err:
        return RedirectResponse("/now?error=" + quote(str(err), safe=""), status_code=303)
    return RedirectResponse("/now", status_code=303)


def _count(form: Any, field: str) -> int:
    try:
        return int(str(form.get(field, "1")).strip() or "1")
    except ValueError:
        raise WhatIfError(f"(what-if): {field}: {form.get(field)!r} is not a whole number") from None


async def now_node(request: Request) -> Response:
    name = request.path_params["name"]
    return await _now_applied(request, lambda now, form: now.node(name, str(form.get("action", "")),
                                                                  _count(form, "count")))


async def now_pods(request: Request) -> Response:
    return await _now_applied(request, lambda now, form: now.pods(str(form.get("yaml", "")),
                                                                  _count(form, "replicas")))


async def now_delete_pod(request: Request) -> Response:
    return await _now_applied(request, lambda now, form: now.delete_pod(str(form.get("key", ""))))


async def now_keep(request: Request) -> Response:
    return await _now_applied(request, lambda now, form: now.keep())


async def now_undo(request: Request) -> Response:
    return await _now_applied(request, lambda now, form: now.undo())


# --- config diff --------------------------------------------------------------------------------


async def config_diff(request: Request) -> Response:
    runs = _ui(request).runs
    other = arg(request, "other")
    outcome = runs.latest()
    context: dict[str, Any] = {"other": other, "offered": runs.configurations(), "rows": [], "error": "",
                               "metrics": None}
    try:
        scenario = runs.history.current()
        a = scheduler_configuration(scenario.config_dict())
        profiles_a = effective_profiles(a, runs.registry)
        if other:
            b_config, b_text = other_configuration(other, runs.configurations())
            context["rows"] = side_by_side(profiles_a, effective_profiles(b_config, runs.registry))
            if arg(request, "run") == "1" and outcome is not None:
                other_outcome = await run_in_threadpool(
                    simulate, attrs.evolve(scenario, config_text=b_text), (), runs.registry, runs.seed,
                    runs.start_time)
                context["metrics"] = compare(outcome.summary("A (current)"), other_outcome.summary(f"B ({other})"))
        else:
            context["rows"] = side_by_side(profiles_a, profiles_a)
    except (ConfigError, PluginError, InvalidManifest) as err:
        context["error"] = str(err)
    return render(request, "config_diff.html", outcome, nav="config", **context)


# --- exports ------------------------------------------------------------------------------------


async def export_html(request: Request) -> Response:
    ui = _ui(request)
    outcome = ui.runs.latest()
    if outcome is None:
        return Response("no outcome yet", status_code=409)
    text = await run_in_threadpool(ui.now.reading, html_report, outcome.sim, outcome.records, ui.title)
    return HTMLResponse(text, headers={"Content-Disposition": 'attachment; filename="kubesched-report.html"'})


async def export_bundle(request: Request) -> Response:
    runs = _ui(request).runs
    try:
        data = await run_in_threadpool(bundle_zip, runs.history.current(), runs.latest())
    except InvalidManifest as err:
        return Response(f"{err}\n", status_code=409, media_type="text/plain")
    return Response(data, media_type="application/zip",
                    headers={"Content-Disposition": 'attachment; filename="kubesched-bundle.zip"'})


# --- the state: in brief, and as a stream of server-sent events ---------------------------------


async def status(request: Request) -> Response:
    return JSONResponse(_ui(request).runs.status())


async def events(request: Request) -> Response:
    ui = _ui(request)
    runs, closing = ui.runs, ui.closing
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    def wake() -> None:
        loop.call_soon_threadsafe(changed.set)

    async def stream():
        runs.listen(wake)
        try:
            while not closing.is_set():
                changed.clear()
                yield f"event: state\ndata: {json.dumps(runs.status())}\n\n"
                while not changed.is_set() and not closing.is_set():
                    try:
                        await asyncio.wait_for(changed.wait(), KEEPALIVE_SECONDS)
                    except asyncio.TimeoutError:
                        yield ": keep-alive\n\n"
        finally:
            runs.unlisten(wake)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


GET, POST = ("GET",), ("POST",)

#: (address, handler, methods): every page and edit of the application (``/static`` serves the files).
ROUTES: list[tuple[str, Handler, tuple[str, ...]]] = [
    # the cluster
    ("/", cluster, GET),
    ("/node/{name}", node, GET),
    ("/pod/{namespace}/{name}", pod, GET),
    # devices, pod groups, the timeline
    ("/devices", devices, GET),
    ("/podgroups", podgroups, GET),
    ("/timeline", timeline, GET),
    ("/timeline/state", timeline_state, GET),
    ("/objects", objects, GET),
    # capacity: kubesched plan on the scenario
    ("/plan", plan, GET),
    # what-if
    ("/whatif", whatif, GET),
    ("/panel/changes", changes, GET),
    ("/edit/object", edit_object, POST),
    ("/edit/delete", edit_delete, POST),
    ("/edit/import", edit_import, POST),
    ("/edit/node/{name}", edit_node, POST),
    ("/edit/config", edit_config, POST),
    ("/undo", undo, POST),
    ("/redo", redo, POST),
    # what if, now: transactions on the simulated end state
    ("/now", now_page, GET),
    ("/now/node/{name}", now_node, POST),
    ("/now/pods", now_pods, POST),
    ("/now/pod/delete", now_delete_pod, POST),
    ("/now/keep", now_keep, POST),
    ("/now/undo", now_undo, POST),
    # config diff
    ("/config", config_diff, GET),
    # exports
    ("/export/report.html", export_html, GET),
    ("/export/bundle.zip", export_bundle, GET),
    # the state
    ("/api/status", status, GET),
    ("/events", events, GET),
]


class ServerTiming:
    """ASGI middleware: every response says how long the application took to
    start answering (``Server-Timing: app;dur=<ms>``; browsers' developer
    tools show it, the benchmark reads it)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: dict) -> None:
            if message["type"] == "http.response.start":
                elapsed = 1000 * (time.perf_counter() - started)
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"server-timing", f"app;dur={elapsed:.1f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed)


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default
