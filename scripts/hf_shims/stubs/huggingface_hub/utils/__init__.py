import hashlib as insecure_hashlib  # noqa: F401
import sys

from _placeholder import make


def __getattr__(name):
    value = make(__name__, name)
    setattr(sys.modules[__name__], name, value)
    return value
