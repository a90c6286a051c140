"""core/dra"""
