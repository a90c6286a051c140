"""core/plugin_helpers"""
