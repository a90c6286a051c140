"""Dynamic Resource Allocation below the plugin: the claims of a pod (``claims``), the devices
in use (``allocated_devices``), the scheduler's view of claims in flight (``manager``),
device taints (``devicetaints``), selector evaluation per device (``selectors``) and the
structured allocator as a library (``allocator/``, upstream's k8s.io/dynamic-resource-allocation
``structured``)."""
