"""Replaying production traces on kubesched.

- :mod:`.openb`: Alibaba's GPU trace (cluster-trace-gpu-v2023, "openb") as
  Nodes, ResourceSlices and pods with ResourceClaims, in the FGD paper's
  arrival order;
- :mod:`.replay`: pods arrive one at a time and each is tried once; GPU
  allocation and fragmentation are recorded as arrival grows;
- :mod:`.gorand`: Go's math/rand, for arrival orders and node rankings drawn
  as the paper's simulator draws them.

The GPUs of every node as arrays and the paper's fragmentation measure live
below the plugins, in :mod:`kubesched.core.gpu`.
"""
