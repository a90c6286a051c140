"""DynamicResources, upstream's plugins/dynamicresources: the plugin (:mod:`.plugin`), its Filter
over every node at once (:mod:`.batch`), its writes to ResourceClaims after Reserve (:mod:`.binding`:
PreBind's allocation, reservation and binding conditions, Unreserve's release) and the claim made
for device-backed extended resources (:mod:`.extended`); the allocator and the claims' bookkeeping
it uses are in :mod:`kubesched.core.dra`."""
