"""Helpers plugins share: score normalisation (upstream helper.DefaultNormalizeScore), utilisation
shapes (helper.BuildBrokenLinearFunction), a pod's default selector (helper.DefaultSelector) and
the per-node/batch verdicts of topology plugins (``verdicts``)."""
