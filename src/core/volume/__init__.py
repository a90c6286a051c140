"""Persistent volumes below the plugins: which claims a pod uses and how volumes match claims
(``claims``, upstream component-helpers/storage/volume) and in-tree to CSI translation
(``csi_translation``)."""
