"""Dynamic Resource Allocation: the structured allocator (:mod:`.allocator`)
and the pools it allocates from (:mod:`.pools`)."""
