"""Stand-in huggingface_hub.hf_api: every name on demand (_placeholder.fill_hub_module)."""
from _placeholder import fill_hub_module

fill_hub_module(__name__)
