"""core/observability"""
