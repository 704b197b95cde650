import hashlib as insecure_hashlib  # noqa: F401

from _placeholder import fill_module

fill_module(__name__)
