"""DynamicResources, upstream's plugins/dynamicresources: the plugin (:mod:`.plugin`), its Filter
over every node at once (:mod:`.batch`) and the claim made for device-backed extended resources
(:mod:`.extended`); the allocator and the claims' bookkeeping it uses are in :mod:`kubesched.core.dra`."""
