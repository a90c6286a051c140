"""VolumeBinding: the plugin (:mod:`.plugin`) and the volume binder it drives (:mod:`.binder`)."""

from .plugin import VolumeBinding, VolumeBindingArgs

__all__ = ["VolumeBinding", "VolumeBindingArgs"]
