"""The structured allocator as a library (upstream's k8s.io/dynamic-resource-allocation
``structured``): the search over devices for a node (``allocator``), the pools it sees from that
node (``pools``), consumable capacity (``capacity``) and constraints across a claim's devices
(``constraints``)."""
