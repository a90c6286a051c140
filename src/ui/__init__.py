"""``kubesched ui``: the scheduler simulator in a browser (the optional extra ``kubesched[ui]``).

- :mod:`.scenario`: what is simulated - the files' objects and configuration, the browser's edits, undo/redo;
- :mod:`.runs`: simulating a scenario and the background worker that re-simulates after each edit;
- :mod:`.outcome`, :mod:`.timeline`: one finished run read once for the pages, and the run over simulated time;
- :mod:`.views`: each page's data; :mod:`.app`: the Starlette routes, Jinja2 templates and server-sent events;
- :mod:`.server`: serving on loopback; :mod:`.bundle`: the exported bundle that ``kubesched ui -f`` reopens.

Only :mod:`kubesched.cli` imports this package.
"""
