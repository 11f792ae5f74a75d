"""The package version, at the bottom of the layers: the wire (clientInfo) and the public API
both read it, and neither may import the other."""

__version__ = "0.1.0"
