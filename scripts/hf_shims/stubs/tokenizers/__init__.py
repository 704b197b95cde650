"""Placeholder for the tokenizers package: the demos' character vocabulary is encoded by the scripts themselves."""

from _placeholder import fill_module

__version__ = "0.22.1"

fill_module(__name__)
