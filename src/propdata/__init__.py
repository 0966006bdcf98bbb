"""propdata: United States property records and ZIP-level market statistics over HTTP."""

__version__ = "0.1.0"
