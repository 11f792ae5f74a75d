"""Feature requests, one module per request: what is asked of a running client and the model
values it answers with, each declared as a `Feature` value (`feature.py`). No state of their
own; the service decides which client to ask, the surfaces which features they offer.
`declared.DECLARED` is the one table of them all, by kind (what a feature crosses a process
boundary as). Adding a feature is adding a module here, a line to that table, and a line to
each surface's table."""

from ipylsp.lsp.requests.feature import Feature, FeatureResult, Query

__all__ = ["Feature", "FeatureResult", "Query"]
