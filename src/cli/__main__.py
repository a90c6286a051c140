"""``python -m kubesched.cli``: the ``kubesched`` command."""

from . import app

app()
