"""Placeholder for httpx (imported by transformers.utils.hub; no network use here)."""
import sys

from _placeholder import make


def __getattr__(name):
    value = make(__name__, name)
    setattr(sys.modules[__name__], name, value)
    return value
