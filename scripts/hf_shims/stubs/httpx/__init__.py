"""Placeholder for httpx (imported by transformers.utils.hub; no network use here)."""

from _placeholder import fill_module

fill_module(__name__)
