"""Offline stand-in for huggingface_hub: transformers imports it at start-up; these scripts only read local files."""
import os
import sys

from _placeholder import fill_module

from . import constants, dataclasses, errors, file_download, hf_api, utils  # noqa: F401

__version__ = "1.3.0"
_CACHED_NO_EXIST = object()


def is_offline_mode():
    return True


def try_to_load_from_cache(*args, **kwargs):
    return None


fill_module(__name__)
