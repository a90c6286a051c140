"""``kubesched sweep``: an experiment grid (traces x configs x seeds x arrivals)
on this machine's cores or a Ray cluster, resumable, into one Parquet table.

- :mod:`.spec`: the sweep file;
- :mod:`.cells`: one cell and the function that runs it (the same for every engine);
- :mod:`.engines`: a local process pool or Ray tasks;
- :mod:`.results`: a Parquet file per finished cell, one table for all;
- :mod:`.runner`: the cells not done yet, on an engine.

The grid drawn as the FGD paper does (``kubesched report``) is
:mod:`kubesched.analysis.plots`.
"""
