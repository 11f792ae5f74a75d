"""Feature requests, one module per request: what is asked of a running client and the model
values it answers with, each declared as a `Feature` value (`feature.py`) that this package
registers by importing its module. No state of their own; the service decides which client
to ask. Adding a feature is adding a module here and its line below."""

# isort: off
# Imported to register their features, in the order the surfaces list them.
from ipylsp.lsp.requests import hover  # noqa: F401
from ipylsp.lsp.requests import locations  # noqa: F401
from ipylsp.lsp.requests import completion  # noqa: F401
from ipylsp.lsp.requests import symbols  # noqa: F401
from ipylsp.lsp.requests import calls  # noqa: F401
from ipylsp.lsp.requests import rename  # noqa: F401
from ipylsp.lsp.requests import code_actions  # noqa: F401
from ipylsp.lsp.requests import signature_help  # noqa: F401
# isort: on
from ipylsp.lsp.requests.feature import FEATURES, Feature, FeatureResult, Query

__all__ = ["FEATURES", "Feature", "FeatureResult", "Query"]
