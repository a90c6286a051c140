"""InterPodAffinity (upstream plugins/interpodaffinity): see :mod:`.plugin`."""
