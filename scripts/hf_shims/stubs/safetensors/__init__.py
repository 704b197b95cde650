"""A small pure-python reader/writer of the safetensors format (8-byte little-endian header length,
JSON header of name -> dtype/shape/data_offsets plus optional __metadata__, then the raw bytes)."""
import json
import struct

__version__ = "0.6.2"

_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
           "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header, 8 + n


class SafetensorError(Exception):
    pass


class _Slice:
    def __init__(self, owner, name):
        self._owner, self._name = owner, name

    def get_shape(self):
        return list(self._owner._header[self._name]["shape"])

    def get_dtype(self):
        return self._owner._header[self._name]["dtype"]

    def __getitem__(self, idx):
        return self._owner.get_tensor(self._name)[idx]


class safe_open:
    def __init__(self, path, framework="pt", device="cpu"):
        self._path = path
        self._header, self._base = read_header(path)
        self._meta = self._header.pop("__metadata__", None)
        with open(path, "rb") as f:
            self._data = f.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return list(self._header.keys())

    def metadata(self):
        return self._meta

    def get_slice(self, name):
        return _Slice(self, name)

    def get_tensor(self, name):
        import torch
        info = self._header[name]
        start, end = info["data_offsets"]
        dtype = getattr(torch, _DTYPES[info["dtype"]])
        raw = bytearray(self._data[self._base + start:self._base + end])
        if len(raw) == 0:
            return torch.empty(info["shape"], dtype=dtype)
        return torch.frombuffer(raw, dtype=dtype).reshape(info["shape"]).clone()
