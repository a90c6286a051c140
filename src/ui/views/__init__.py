"""The pages' data: one module per page, each a function of an :class:`~kubesched.ui.outcome.Outcome`."""
