"""Replaying production traces on kubesched.

- :mod:`.openb`: Alibaba's GPU trace (cluster-trace-gpu-v2023, "openb") as
  Nodes, ResourceSlices and pods with ResourceClaims, in the FGD paper's
  arrival order;
- :mod:`.replay`: pods arrive one at a time and each is tried once; GPU
  allocation and fragmentation are recorded as arrival grows;
- :mod:`.gpus`: the GPUs of every node as numpy arrays, kept current from the
  scheduler's DRA manager (for replays and for GPU-aware plugins);
- :mod:`.fragmentation`: the paper's GPU fragmentation measure.
"""
