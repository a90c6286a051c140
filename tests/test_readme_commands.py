"""Every shell command the READMEs show runs as written on a checkout.

The fenced ``sh`` blocks of README.md and of the READMEs under examples/ and
benchmarks/ are read in order, a README's commands one after another in one
scratch copy of the tracked files (so a command may read what an earlier one
wrote, and nothing needs ../shared).  A command must exit 0 without a
traceback and without a Python enum repr (``<ActionType.DELETE: 2>``) in its
output.  ``kubesched`` commands run in process (typer's CliRunner);
``python -m pytest FILE`` and the long-running ones in a subprocess.

- ``# (long: ~N s|min|h ...)`` in a command's comment: it takes long (full perf
  suites, the paper's grid, replays of the whole trace) and is not run here;
- ``# (live cluster)``: run against the tests' fake API server
  (tests/fake_apiserver.py) holding examples/cluster, ``~/.kube/config``
  standing for its kubeconfig;
- ``# (in a pod ...)``: ``--in-cluster`` outside a pod must be refused in one line;
- ``kubesched run`` and ``kubesched ui`` serve until stopped: each must get
  ready (``caches synced``; its address answering) and stop with exit 0 on
  SIGTERM (the UI: Ctrl-C, exit 0 or 130) (``--port 0`` is added: the default
  port may be taken here);
  ``CMD &`` runs in the background until the block ends;
- ``pip install`` is not run (the suite runs after ``pip install '.[test]'``):
  every extra it names must exist and every path must be a package, and an
  editable install of a package is emulated by putting its sources and entry
  points on ``sys.path``; the bare ``python -m pytest`` is this suite itself;
- ``python FILE.py`` runs a script the README writes (below) in a subprocess.

A code block whose first line is ``# FILE`` (the plugin walk-through's
my_plugins.py, its tests, its package's pyproject.toml and profile) is
written to the scratch directory first, and an output block preceded by
``<!-- output: COMMAND [(exit N)] -->`` must appear in COMMAND's output
(whitespace and table borders aside; ``...`` stands for anything).
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from fake_apiserver import FakeAPIServer, wait_until
from kubesched.cli import app
from kubesched.drivers.simulation import load_paths

ROOT = Path(__file__).resolve().parents[1]
READMES = ["README.md", "examples/binding-conditions/README.md", "examples/kubesched-fgd/README.md",
           "benchmarks/README.md"]
LONG = re.compile(r"\(long: [^)]*?(~[\d.,]+ ?(?:s|min|h)\b|needs [^)]+)")
ENUM_REPR = re.compile(r"<\w+\.\w+: -?\d+>")
BORDERS = re.compile(r"[│┃┏┓┗┛┡┩━─┳┻╇╈┼├┤┌┐└┘╭╮╰╯]+")
#: How long a server command may take to get ready (seconds of wall time).
READY_TIMEOUT = 60


def commands_of(readme: str) -> list[tuple[int, str, str]]:
    """(block number, command, comment) of every command in ``readme``'s sh blocks, in order: continuation lines
    joined, full-line comments dropped, a trailing ``# comment`` split off."""
    text = (ROOT / readme).read_text()
    out = []
    for number, block in enumerate(re.findall(r"```sh\n(.*?)```", text, flags=re.S)):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            command, _, comment = line.partition(" # ")
            out.append((number, " ".join(command.split()), comment.strip()))
    return out


def named_files(readme: str) -> dict[str, str]:
    """``{name: text}`` of the code blocks whose first line is ``# NAME``."""
    text = (ROOT / readme).read_text()
    files = {}
    for block in re.findall(r"```(?:python|toml|yaml)\n(.*?)```", text, flags=re.S):
        first = block.splitlines()[0]
        if first.startswith("# "):
            files[first[2:].strip()] = block
    return files


def shown_outputs(readme: str) -> list[tuple[str, int, str]]:
    """(command, exit code, shown text) of the output blocks marked ``<!-- output: COMMAND [(exit N)] -->``."""
    text = (ROOT / readme).read_text()
    out = []
    for command, block in re.findall(r"<!-- output: (.*?) -->\n```[a-z]*\n(.*?)```", text, flags=re.S):
        code = re.search(r"\(exit (\d+)\)$", command)
        out.append((command[:code.start()].strip() if code else command.strip(), int(code.group(1)) if code else 0,
                    block))
    return out


def fences(readme: str) -> list[tuple[str, str, str]]:
    """(info string, the line before the opening fence, content) of every fenced block of ``readme``."""
    out, lines = [], (ROOT / readme).read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            start, info = i, lines[i].strip()[3:].strip()
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                i += 1
            out.append((info, lines[start - 1] if start else "", "\n".join(lines[start + 1:i])))
        i += 1
    return out


def normalized(text: str) -> str:
    return " ".join(BORDERS.sub(" ", text).split())


class Scratch:
    """A README's scratch copy of the checkout, the packages installed in it (emulated) and its servers."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch):
        self.path, self.monkeypatch = path, monkeypatch
        self.site = path / ".site"
        self.site.mkdir()
        self.python_path = [str(self.site)]
        self.background: list[subprocess.Popen] = []
        self.fake: FakeAPIServer | None = None
        self.fake_kubeconfig = ""

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": os.pathsep.join([*self.python_path, os.environ.get("PYTHONPATH", "")]),
                "BROWSER": "true", "COLUMNS": "200"}

    def install_editable(self, project: Path) -> None:
        """``pip install -e PROJECT`` as far as kubesched sees it: its modules importable and its entry points
        found (a dist-info on sys.path), unless a distribution of that name is installed already."""
        import importlib.metadata

        meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        try:
            importlib.metadata.distribution(meta["name"])
            return
        except importlib.metadata.PackageNotFoundError:
            pass
        info = self.site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
            for group, points in meta.get("entry-points", {}).items()))
        source = project / "src" if (project / "src").is_dir() else project
        self.python_path.insert(0, str(source))
        for entry in (str(source), str(self.site)):
            self.monkeypatch.syspath_prepend(entry)

    def stop_background(self) -> None:
        for process in self.background:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        self.background.clear()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The tracked files of this checkout, copied (what a fresh clone has)."""
    target = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in listed.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.fixture
def scratch(checkout, tmp_path, monkeypatch) -> Iterator[Scratch]:
    work = tmp_path / "checkout"
    shutil.copytree(checkout, work, symlinks=True)
    monkeypatch.chdir(work)
    # a fresh process has no log handlers: none left by earlier tests (on streams they closed) may print here
    for logger in [logging.getLogger(), *(logging.getLogger(name) for name in logging.root.manager.loggerDict)]:
        monkeypatch.setattr(logger, "handlers", [])
    state = Scratch(work, monkeypatch)
    try:
        yield state
    finally:
        state.stop_background()
        if state.fake is not None:
            state.fake.stop()


def _checked(output: str, command: str) -> None:
    assert "Traceback" not in output, f"{command}:\n{output}"
    assert not ENUM_REPR.search(output), f"{command}: a Python enum repr: {ENUM_REPR.search(output).group(0)}"


def _kubesched(args: list[str], command: str, expect: int = 0) -> str:
    stdout_file = None
    if ">" in args:
        at = args.index(">")
        args, stdout_file = args[:at], args[at + 1]
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{command}: {result.exception!r}") from result.exception
    assert result.exit_code == expect, f"{command}: exit {result.exit_code}\n{result.output}"
    _checked(result.output, command)
    if stdout_file is not None:
        Path(stdout_file).write_text(result.stdout)
    return result.output


def _pip(args: list[str], command: str, scratch: Scratch) -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    editable = "-e" in args
    for target in (a for a in args[2:] if a != "-e"):
        path, _, named = target.partition("[")
        assert set(filter(None, named.rstrip("]").split(","))) <= set(extras), f"{command}: unknown extra"
        assert (scratch.path / path / "pyproject.toml").is_file(), f"{command}: {path} is not a package"
        if editable and path != ".":
            scratch.install_editable(scratch.path / path)


def _serve(args: list[str], command: str, scratch: Scratch, ready: str, stop: int) -> None:
    """Run a server command until it prints ``ready`` (and a web page it names answers), then stop it with
    ``stop``: exit 0, or 130 after SIGINT (a shell's status for Ctrl-C)."""
    if args[0] == "kubesched":
        args = [sys.executable, "-m", "kubesched.cli", *args[1:], "--port", "0"]
    process = subprocess.Popen(args, cwd=scratch.path, env=scratch.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if ready in line:
                break
        else:
            raise AssertionError(f"{command}: ended before {ready!r}:\n{''.join(lines)}")
        address = re.search(r"http://[\d.:]+/", lines[-1])
        if address is not None:  # a web page: it answers before the user presses Ctrl-C
            with urllib.request.urlopen(address.group(0), timeout=READY_TIMEOUT) as page:
                assert page.status == 200
        if scratch.fake is not None and "--kubeconfig" in args:
            wait_until(lambda: all(p.spec.node_name for p in scratch.fake.cluster.list("Pod").items
                                   if p.metadata.name.startswith(("web", "api"))), scratch.fake.changed, READY_TIMEOUT)
        process.send_signal(stop)
        rest, _ = process.communicate(timeout=READY_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = "".join(lines) + rest
    assert process.returncode in ((0, 130) if stop == signal.SIGINT else (0,)), \
        f"{command}: exit {process.returncode}\n{output}"
    _checked(output, command)


def run_command(command: str, comment: str, scratch: Scratch) -> None:
    """Run one README command (see the module docstring)."""
    if "(live cluster)" in comment:
        if scratch.fake is None:
            scratch.fake = FakeAPIServer().start()
            load_paths(scratch.fake.cluster, [scratch.path / "examples/cluster"])
            scratch.fake_kubeconfig = scratch.fake.kubeconfig(scratch.path / "fake.kubeconfig")
        command = command.replace("~/.kube/config", scratch.fake_kubeconfig)
    for part in command.split(" && "):
        args = shlex.split(part)
        background = args[-1] == "&"
        args = args[:-1] if background else args
        if args[0] == "pip":
            _pip(args, part, scratch)
        elif args[:3] == ["python", "-m", "pytest"]:
            if len(args) == 3:
                continue  # the suite this test is part of
            # the scratch copy's pyproject would run it on worker processes (xdist): a user's directory has none
            done = subprocess.run([sys.executable, *args[1:], "-q", "-p", "no:cacheprovider", "-o", "addopts="],
                                  cwd=scratch.path,
                                  env=scratch.env(), capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{part}:\n{done.stdout}{done.stderr}"
        elif background:
            process = subprocess.Popen([sys.executable, *args[1:]] if args[0] == "python" else args,
                                       cwd=scratch.path, env=scratch.env(), stdout=subprocess.PIPE, text=True)
            scratch.background.append(process)
            assert process.stdout is not None and process.stdout.readline(), f"{part}: printed nothing"
        elif args[:2] == ["kubesched", "run"] and "--in-cluster" in args:
            assert "(in a pod" in comment, f"{part}: --in-cluster without '(in a pod' in its comment"
            output = _kubesched(args[1:], part, expect=2)
            assert len(output.strip().splitlines()) == 1, output
        elif args[:2] == ["kubesched", "run"]:
            _serve(args, part, scratch, "caches synced", signal.SIGTERM)
        elif args[:2] == ["kubesched", "ui"]:
            _serve(args, part, scratch, "kubesched ui: http://", signal.SIGINT)
        elif args[0] == "kubesched":
            _kubesched(args[1:], part)
        elif args[0] == "python" and len(args) == 2 and args[1].endswith(".py"):  # a script the README writes
            done = subprocess.run([sys.executable, args[1]], cwd=scratch.path, env=scratch.env(),
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{part}:\n{done.stdout}{done.stderr}"
            _checked(done.stdout, part)
        else:
            raise AssertionError(f"{part}: the test does not know how to run it; mark it (long: ...) if it is long")


def _cases() -> list:
    return [pytest.param(readme, id=readme) for readme in READMES]


def test_the_readme_names_its_files_and_marks_what_it_does_not_run():
    for readme in READMES:
        for _, command, comment in commands_of(readme):
            if "--kubeconfig ~/" in command:
                assert "(live cluster)" in comment, f"{readme}: {command}: needs '# (live cluster)'"
            words = set(shlex.split(command))
            placeholders = words & {"CONFIG", "NODES.csv", "PODS.csv", "A.yaml", "B.yaml", "my-config.yaml"}
            assert not placeholders, f"{readme}: {command}: placeholders {placeholders} do not run as written"
    first = commands_of("README.md")[:2]
    assert [c for _, c, _ in first] == ["pip install . && kubesched simulate -f examples/cluster",
                                        "pip install '.[test]' && python -m pytest"]


@pytest.mark.long
@pytest.mark.parametrize("readme", _cases())
def test_every_command_runs_as_written(readme, scratch):
    for name, text in named_files(readme).items():
        target = "my-plugins/pyproject.toml" if name == "pyproject.toml of your package" else name
        (scratch.path / target).parent.mkdir(parents=True, exist_ok=True)
        (scratch.path / target).write_text(text)
    if (scratch.path / "my-plugins/pyproject.toml").is_file():
        shutil.copy(scratch.path / "my_plugins.py", scratch.path / "my-plugins/my_plugins.py")
    ran = 0
    previous_block = None
    for block, command, comment in commands_of(readme):
        if block != previous_block:
            scratch.stop_background()
            previous_block = block
        if LONG.search(comment):
            continue
        if command == "pip install -e .":  # the plugin walk-through's package, in its directory
            scratch.install_editable(scratch.path / "my-plugins")
            continue
        run_command(command, comment, scratch)
        ran += 1
    long = [c for _, c, comment in commands_of(readme) if "(long" in comment and not LONG.search(comment)]
    assert not long, f"{readme}: a long command must say how long: (long: ~N s|min|h) or (long: needs ...): {long}"
    assert ran or readme == "benchmarks/README.md"


@pytest.mark.parametrize("readme", _cases())
def test_the_output_shown_is_the_output(readme, scratch):
    unmarked = [content for info, before, content in fences(readme)
                if not info and not before.startswith("<!-- output:")]
    assert not unmarked, f"{readme}: an output block without <!-- output: COMMAND -->: {unmarked[0][:80]}"
    for command, code, shown in shown_outputs(readme):
        output = normalized(_kubesched(shlex.split(command)[1:], command, expect=code))
        for line in shown.splitlines():
            pieces = [normalized(piece) for piece in line.split("...")]
            position = 0
            for piece in filter(None, pieces):
                found = output.find(piece, position)
                assert found >= 0, f"{readme}: {command}: {piece!r} is not in its output:\n{output}"
                position = found + len(piece)


def test_the_plugin_walk_through_moves_pods_to_the_premium_node(scratch):
    files = named_files("README.md")
    (scratch.path / "my-plugins").mkdir()
    for name, target in (("my_plugins.py", "my-plugins/my_plugins.py"),
                         ("pyproject.toml of your package", "my-plugins/pyproject.toml"),
                         ("prefer-premium.yaml", "prefer-premium.yaml")):
        (scratch.path / target).write_text(files[name])
    scratch.install_editable(scratch.path / "my-plugins")
    before = normalized(_kubesched(["simulate", "-f", "examples/cluster"], "without the plugin"))
    after = normalized(_kubesched(["simulate", "-f", "examples/cluster", "--config", "prefer-premium.yaml"],
                                  "with the plugin"))
    text = (ROOT / "README.md").read_text()
    shown = re.findall(r"```text\n(.*?)```", text[text.index("## Write your first plugin"):], flags=re.S)
    assert len(shown) == 2
    for block, output in zip(shown, (before, after)):
        for line in block.splitlines():
            assert normalized(line) in output, (line, output)
    typo = scratch.path / "typo.yaml"
    typo.write_text(files["prefer-premium.yaml"].replace("{label: tier}", "{lable: tier}"))
    refused = _kubesched(["simulate", "-f", "examples/cluster", "--config", str(typo)], "a typo", expect=2)
    assert "PreferLabel" in refused and "lable" in refused and len(refused.strip().splitlines()) == 1
