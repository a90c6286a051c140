"""Helpers Score plugins share: score normalisation (upstream helper.DefaultNormalizeScore) and
utilisation shapes (helper.BuildBrokenLinearFunction)."""
