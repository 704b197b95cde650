"""Offline stand-in for huggingface_hub: transformers imports it at start-up; these scripts only read local files."""
import os
import sys

from _placeholder import make

from . import constants, dataclasses, errors, file_download, hf_api, utils  # noqa: F401

__version__ = "1.3.0"
_CACHED_NO_EXIST = object()


def is_offline_mode():
    return True


def try_to_load_from_cache(*args, **kwargs):
    return None


def __getattr__(name):
    value = make(__name__, name)
    setattr(sys.modules[__name__], name, value)
    return value
