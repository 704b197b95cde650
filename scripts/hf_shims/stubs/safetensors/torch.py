import json
import struct

from . import _DTYPES, safe_open

_NAMES = {v: k for k, v in _DTYPES.items()}


def save_file(tensors, filename, metadata=None):
    import torch
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        dtype = _NAMES[str(t.dtype).replace("torch.", "")]
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(filename, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load_file(filename, device="cpu"):
    with safe_open(filename) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def storage_ptr(tensor):
    try:
        return tensor.untyped_storage().data_ptr()
    except (AttributeError, NotImplementedError):
        return tensor.storage().data_ptr()


def storage_size(tensor):
    try:
        return tensor.untyped_storage().nbytes()
    except (AttributeError, NotImplementedError):
        return tensor.storage().size() * tensor.element_size()
