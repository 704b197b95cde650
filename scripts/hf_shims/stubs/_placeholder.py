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
