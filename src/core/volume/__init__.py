"""core/volume"""
