"""Capacity planning on kube-scheduler's decisions: ``kubesched plan`` (issue 39, item 3).

- :mod:`.templates`: Node manifests marked ``kubesched.io/node-template``, their cost, max count, devices;
- :mod:`.expanders`: cluster-autoscaler's least-waste, price and priority expanders;
- :mod:`.scale_up`: which nodes to add so every pending pod and gang fits (greedy, or a rollout search);
- :mod:`.scale_down`: which nodes can go with every pod still fitting (PodDisruptionBudgets respected).

Everything is asked of :mod:`kubesched.sim` (forks of the simulation, the scheduler's own decisions).
"""
