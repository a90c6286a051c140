"""The cluster as the scheduler sees it: the client protocol (``client``), the embedded
in-memory API server (``memory``), the real one through the official client (``kube``),
informers, the assume cache, and leader election."""
