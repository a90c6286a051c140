"""kubesched: the Kubernetes scheduling framework in Python."""

__version__ = "0.1.0"
