"""Reading a demo (config.json + one model.safetensors) into the float32 model, and writing the MTP
layer into its checkpoint without changing a byte of any tensor already there.

The safetensors reader/writer is the pure-python one in scripts/hf_shims/stubs/safetensors.
"""
import importlib.util
import json
import os
import sys

import torch

from .model import Config, MainModel, MtpLayer

_STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hf_shims", "stubs",
                     "safetensors")


def _load_stub():
    spec = importlib.util.spec_from_file_location("safetensors", os.path.join(_STUB, "__init__.py"),
                                                  submodule_search_locations=[_STUB])
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("safetensors", module)
    spec.loader.exec_module(module)
    return sys.modules["safetensors"]


safetensors = _load_stub()
from safetensors.torch import save_file  # noqa: E402  (the stub just registered)


def weights_path(demo):
    return os.path.join(demo, "model.safetensors")


def read_config(demo):
    with open(os.path.join(demo, "config.json")) as f:
        return Config(json.load(f))


def read_tensors(demo):
    """name -> tensor in the file's dtype."""
    with safetensors.safe_open(weights_path(demo)) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def raw_bytes(demo):
    """name -> (dtype, shape, the tensor's bytes) straight from the file."""
    header, base = safetensors.read_header(weights_path(demo))
    header.pop("__metadata__", None)
    with open(weights_path(demo), "rb") as f:
        data = f.read()
    return {k: (v["dtype"], tuple(v["shape"]), data[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
            for k, v in header.items()}


def mtp_prefix(cfg, index=0):
    return f"model.layers.{cfg.layers + index}."


def load_main(demo):
    """The main model in float32 (the bf16 weights widened exactly), every parameter frozen."""
    cfg = read_config(demo)
    tensors = read_tensors(demo)
    model = MainModel(cfg)
    prefix = mtp_prefix(cfg)
    main = {k: v.float() for k, v in tensors.items() if not k.startswith(prefix)}
    model.load_state_dict(main, strict=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return cfg, model, tensors


def load_mtp(cfg, tensors):
    """The MTP layer stored in the checkpoint (None when there is none)."""
    prefix = mtp_prefix(cfg)
    mine = {k[len(prefix):]: v.float() for k, v in tensors.items() if k.startswith(prefix)}
    if not mine:
        return None
    layer = MtpLayer(cfg)
    # Copies of the main embedding/head (DeepSeek-V3's layout) are checked for equality on export;
    # the layer itself always reads the main model's.
    for shared in ("embed_tokens.weight", "shared_head.head.weight"):
        mine.pop(shared, None)
    layer.load_state_dict(mine, strict=True)
    layer.eval()
    return layer


def mtp_tensors(cfg, layer, main_model, store_shared_copies):
    """The MTP layer under the checkpoint's names, bf16 (the router's correction bias F32, as the
    main layers store it); with DeepSeek-V3's copies of the embedding and head when asked."""
    prefix = mtp_prefix(cfg)
    out = {}
    for name, t in layer.state_dict().items():
        dtype = torch.float32 if name.endswith("e_score_correction_bias") else torch.bfloat16
        out[prefix + name] = t.detach().to(dtype).contiguous()
    if store_shared_copies:
        out[prefix + "embed_tokens.weight"] = main_model.model.embed_tokens.weight.detach().to(torch.bfloat16)
        out[prefix + "shared_head.head.weight"] = main_model.lm_head.weight.detach().to(torch.bfloat16)
    return out


def write_with_mtp(demo, new_tensors):
    """Rewrites model.safetensors with new_tensors added (replacing an earlier MTP layer's) and
    checks that every main tensor's dtype, shape and bytes are unchanged."""
    before = raw_bytes(demo)
    cfg = read_config(demo)
    prefix = mtp_prefix(cfg)
    kept = {k: v for k, v in read_tensors(demo).items() if not k.startswith(prefix)}
    clash = set(kept) & set(new_tensors)
    if clash:
        raise SystemExit(f"export: the MTP tensors would replace main tensors: {sorted(clash)[:3]}")
    header, _ = safetensors.read_header(weights_path(demo))
    tmp = weights_path(demo) + ".tmp"
    save_file({**kept, **new_tensors}, tmp, metadata=header.get("__metadata__"))
    os.replace(tmp, weights_path(demo))
    after = raw_bytes(demo)
    for name, entry in before.items():
        if name.startswith(prefix):
            continue
        if after.get(name) != entry:
            raise SystemExit(f"export: {name} changed in {weights_path(demo)}")
    return sum(1 for k in before if not k.startswith(prefix)), len(new_tensors)
