"""core/dra/allocator"""
