"""The scheduling framework: extension points as pluggy hookspecs (``hookspecs``), profiles from
KubeSchedulerConfiguration (``config``), the plugin registry, the framework that runs a
profile's plugins (``runtime``), CycleState, NodeInfo and the snapshot's NodeTable, Status,
preemption and the rejection diagnosis."""
