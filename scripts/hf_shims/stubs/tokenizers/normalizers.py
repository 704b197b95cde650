"""Placeholder for the tokenizers package: the demos' character vocabulary is encoded by the scripts themselves."""

from _placeholder import fill_module

fill_module(__name__)
