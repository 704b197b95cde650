import sys

from _placeholder import make

REGEX_COMMIT_HASH = __import__("re").compile(r"^[0-9a-f]{40}$")


def validate_typed_dict(*args, **kwargs):
    return None


def __getattr__(name):
    value = make(__name__, name)
    setattr(sys.modules[__name__], name, value)
    return value
