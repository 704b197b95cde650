"""Stand-in huggingface_hub.dataclasses: every name on demand (_placeholder.fill_hub_module)."""
from _placeholder import fill_hub_module

fill_hub_module(__name__)
