"""core/controller"""
