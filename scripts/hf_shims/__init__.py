"""Run transformers 5 (the source at commit 147b7aa0, v5.3.0.dev0) on Debian's torch 1.13.1.

transformers 5 asks for torch >= 2.4 and for huggingface_hub, tokenizers and safetensors, none of
which Debian 12 ships at those versions. The model classes themselves only need float32 eager
math that 1.13 has, so this module fills the gaps: `install(transformers_src)` patches the few
torch 2.x names transformers touches on the CPU/eager path (each listed in SHIMS, recorded in the
demos' meta.json), puts small stand-in packages for huggingface_hub / tokenizers and a pure-python
safetensors (stubs/) on sys.path, and writes dist-info metadata so transformers' version checks
pass. Nothing here changes the arithmetic of a forward pass.
"""
import contextlib
import functools
import os
import sys
import tempfile

SHIMS = []
STUBS = [
    "huggingface_hub (offline placeholder)",
    "tokenizers (placeholder)",
    "safetensors (own pure-python implementation)",
    "fake dist-info metadata: torch 2.4.0 (real: 1.13.1), huggingface_hub 1.3.0, safetensors 0.6.2, tokenizers 0.22.1",
]

_FAKE_DISTS = {"torch": "2.4.0", "huggingface_hub": "1.3.0", "safetensors": "0.6.2", "tokenizers": "0.22.1"}


def _note(text):
    SHIMS.append(text)


def _write_dist_info(root):
    for name, version in _FAKE_DISTS.items():
        d = os.path.join(root, f"{name}-{version}.dist-info")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        with open(os.path.join(d, "top_level.txt"), "w") as f:
            f.write(name + "\n")


def _patch_torch():
    import torch
    import torch.nn as nn

    torch.distributed.is_available = lambda: False
    _note("torch.distributed.is_available -> False (1.13 has no torch.distributed.tensor; single process anyway)")

    import torch.utils._pytree as pytree
    if not hasattr(pytree, "register_pytree_node"):
        def register_pytree_node(cls, flatten_fn, unflatten_fn, **_kwargs):
            pytree._register_pytree_node(cls, flatten_fn, unflatten_fn)
        pytree.register_pytree_node = register_pytree_node
        _note("torch.utils._pytree.register_pytree_node -> _register_pytree_node (extra kwargs dropped)")

    import torch.library as tlib
    for name in ("custom_op", "register_fake", "register_autograd"):
        if not hasattr(tlib, name):
            def noop(*args, **kwargs):
                if args and callable(args[0]) and len(args) == 1 and not kwargs:
                    return args[0]
                return lambda fn: fn
            setattr(tlib, name, noop)
            _note(f"torch.library.{name} -> no-op (compile-only op registration; experts_implementation='eager' used)")

    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float4_e2m1fn_x2", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, type(name, (), {"__repr__": lambda self, n=name: f"torch.{n}(placeholder)"})())
            _note(f"torch.{name} -> placeholder object (dtype absent in 1.13; only appears in lookup tables)")

    # 2.x lets no_grad/enable_grad decorate a function without being called first.
    for name in ("no_grad", "enable_grad"):
        base = getattr(torch, name)

        class Bare(base):
            def __new__(cls, fn=None):
                if fn is not None and callable(fn):
                    return base()(fn)
                return super().__new__(cls)

            def __init__(self, fn=None):
                super().__init__()
        Bare.__name__ = name
        setattr(torch, name, Bare)
    _note("torch.no_grad/enable_grad accept bare-decorator use (@torch.no_grad) as in 2.x")

    if not hasattr(torch, "compiler") or not hasattr(torch.compiler, "disable"):
        import types
        comp = types.ModuleType("torch.compiler")
        comp.disable = lambda fn=None, recursive=True, **k: fn if fn is not None else (lambda f: f)
        comp.allow_in_graph = lambda fn: fn
        comp.is_compiling = lambda: False
        comp.is_exporting = lambda: False
        comp.is_dynamo_compiling = lambda: False
        comp.reset = lambda: None
        torch.compiler = comp
        sys.modules["torch.compiler"] = comp
        _note("torch.compiler.{disable,allow_in_graph,is_compiling,is_exporting,reset} -> identity/False (no compilation)")

    if not hasattr(torch, "get_default_device"):
        torch.get_default_device = lambda: torch.device("cpu")
        _note("torch.get_default_device -> cpu")

    for name in ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                 "xavier_normal_", "orthogonal_", "sparse_", "constant_", "ones_", "zeros_", "eye_", "dirac_"):
        fn = getattr(nn.init, name, None)
        if fn is None:
            continue

        def wrap(fn):
            @functools.wraps(fn)
            def inner(*args, generator=None, **kwargs):
                return fn(*args, **kwargs)
            return inner
        setattr(nn.init, name, wrap(fn))
    _note("torch.nn.init.* accept and ignore generator= (random init only; all weights are overwritten by the checkpoint)")

    orig_autocast = torch.is_autocast_enabled

    def is_autocast_enabled(device_type=None):
        if device_type is None or device_type == "cuda":
            return orig_autocast()
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return False
    torch.is_autocast_enabled = is_autocast_enabled
    _note("torch.is_autocast_enabled(device_type) -> 1.13 per-device queries (autocast is never enabled)")

    if not hasattr(torch, "xpu"):
        import types
        torch.xpu = types.SimpleNamespace(is_available=lambda: False)
    else:
        torch.xpu.is_available = lambda: False
    _note("torch.xpu.is_available -> False (namespace absent in 1.13)")

    if not hasattr(torch, "OutOfMemoryError"):
        torch.OutOfMemoryError = torch.cuda.OutOfMemoryError
        _note("torch.OutOfMemoryError -> torch.cuda.OutOfMemoryError")

    for name in ("named_buffers", "named_parameters"):
        orig = getattr(nn.Module, name)

        def wrap(orig):
            def method(self, prefix="", recurse=True, remove_duplicate=True):
                if remove_duplicate:
                    return orig(self, prefix=prefix, recurse=recurse)
                return _named_members_all(self, prefix, recurse, "_buffers" if orig.__name__ == "named_buffers" else "_parameters")
            method.__name__ = orig.__name__
            return method
        setattr(nn.Module, name, wrap(orig))
        _note(f"nn.Module.{name}(remove_duplicate=) support (2.0 API)")

    orig_get, orig_set = torch.Tensor.__getitem__, torch.Tensor.__setitem__

    def fix(idx):
        if isinstance(idx, torch.Tensor) and idx.dtype == torch.int32:
            return idx.long()
        if isinstance(idx, tuple):
            return tuple(fix(i) for i in idx)
        return idx
    torch.Tensor.__getitem__ = lambda self, idx: orig_get(self, fix(idx))
    torch.Tensor.__setitem__ = lambda self, idx, value: orig_set(self, fix(idx), value)
    _note("Tensor.__getitem__/__setitem__: int32 index tensors cast to int64 (2.x accepts int32 indices)")


def _named_members_all(module, prefix, recurse, attr):
    modules = module.named_modules(prefix=prefix, remove_duplicate=False) if recurse else [(prefix, module)]
    for mod_prefix, mod in modules:
        for k, v in getattr(mod, attr).items():
            if v is None:
                continue
            yield (mod_prefix + ("." if mod_prefix else "") + k), v


class _MetaDevice:
    """torch.device('meta') as a context manager (2.x); 1.13's torch.device is not one."""

    def __enter__(self):
        import torch
        from torch.overrides import TorchFunctionMode

        factories = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.arange,
                     torch.tensor, torch.empty_like, torch.zeros_like, torch.ones_like, torch.eye, torch.linspace}

        class DeviceContext(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func in factories and kwargs.get("device") is None:
                    kwargs["device"] = torch.device("meta")
                return func(*args, **kwargs)
        self.mode = DeviceContext()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


def _patch_transformers():
    import torch
    from transformers import modeling_utils

    orig = modeling_utils.PreTrainedModel.get_init_context.__func__

    def get_init_context(cls, *args, **kwargs):
        contexts = orig(cls, *args, **kwargs)
        return [_MetaDevice() if isinstance(c, torch.device) and c.type == "meta" else c for c in contexts]
    modeling_utils.PreTrainedModel.get_init_context = classmethod(get_init_context)
    _note("PreTrainedModel.get_init_context: torch.device('meta') entry -> TorchFunctionMode DeviceContext('meta') "
          "(1.13 torch.device is not a context manager)")


def install(transformers_src):
    """Patch torch, put the stubs and transformers_src on sys.path, import transformers; returns it."""
    if not os.path.isdir(os.path.join(transformers_src, "transformers")):
        raise SystemExit(f"{transformers_src}: no transformers/ package here (pass the transformers source's src/)")
    here = os.path.dirname(os.path.abspath(__file__))
    dist = tempfile.mkdtemp(prefix="hf_shims_dist_")
    _write_dist_info(dist)
    sys.path[:0] = [dist, os.path.join(here, "stubs"), transformers_src]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    _patch_torch()
    import transformers
    _patch_transformers()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def versions():
    import numpy
    import torch
    import transformers
    return {
        "transformers_version": transformers.__version__,
        "transformers_commit": "147b7aa040812b079f467e777a2d2e1284167de0",
        "torch_version": f"{torch.__version__} (Debian python3-torch 1.13.1+dfsg-4)",
        "numpy_version": numpy.__version__,
        "python": sys.version.split()[0],
    }
