"""PodTopologySpread (upstream plugins/podtopologyspread): see :mod:`.plugin`."""
