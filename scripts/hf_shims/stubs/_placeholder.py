"""Names a stand-in package exports on demand: errors are Exception subclasses, everything else a
class whose calls return None (the demo scripts never touch the hub, the network or a fast tokenizer;
transformers only calls a few of these at import time, e.g. are_progress_bars_disabled)."""


def make(module_name, name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name.endswith(("Error", "Exception")) or name == "OfflineModeIsEnabled":
        return type(name, (Exception,), {"__module__": module_name})

    class Placeholder:
        def __new__(cls, *args, **kwargs):
            return None

        def __class_getitem__(cls, item):
            return cls
    Placeholder.__name__ = Placeholder.__qualname__ = name
    Placeholder.__module__ = module_name
    return Placeholder



def fill_module(module_name, **values):
    """Makes a stand-in module answer every name on demand (PEP 562's module __getattr__), after
    setting `values`."""
    import sys

    module = sys.modules[module_name]
    for name, value in values.items():
        setattr(module, name, value)

    def answer(name):
        value = make(module_name, name)
        setattr(module, name, value)
        return value

    module.__getattr__ = answer


def fill_hub_module(module_name):
    """A huggingface_hub submodule, with the two values transformers reads from them at import time."""
    import re

    fill_module(module_name, REGEX_COMMIT_HASH=re.compile(r"^[0-9a-f]{40}$"),
                validate_typed_dict=lambda *args, **kwargs: None)
