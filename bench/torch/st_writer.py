"""A minimal safetensors writer (F32, F64, F16, BF16, I32, I64, U8, BOOL)
and reader (F32, F64, I32, I64, U8, BOOL), for machines
without the `safetensors` package (Debian ships python3-torch but not it).

It follows the reference implementation's layout: an 8-byte little-endian
header length N, N bytes of JSON (compact, "__metadata__" first, then the
tensors with contiguous data_offsets in the order given), padded with spaces
to a multiple of 8, then the raw little-endian data. Files are written to a
temporary file in the same directory and renamed into place.
"""
import json
import os
import struct
import tempfile

import numpy as np
import torch

_DTYPES = {torch.float32: ("F32", "<f4"), torch.float64: ("F64", "<f8"), torch.float16: ("F16", "<f2"),
           torch.bfloat16: ("BF16", None), torch.int32: ("I32", "<i4"), torch.int64: ("I64", "<i8"),
           torch.uint8: ("U8", "u1"), torch.bool: ("BOOL", "?")}
_NUMPY = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "U8": "u1", "BOOL": "?"}


def to_bytes(tensors, metadata=None):
    """The bytes of a safetensors file holding `tensors` (name -> tensor)."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, t in tensors.items():
        if name == "__metadata__":
            raise ValueError("'__metadata__' is not a valid tensor name")
        t = t.detach().cpu().contiguous()
        if t.dtype not in _DTYPES:
            raise ValueError(f"{name}: dtype {t.dtype} not supported")
        tag, np_dtype = _DTYPES[t.dtype]
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its 16 bits as they are
            blob = t.view(torch.int16).numpy().astype("<i2", copy=False).tobytes()
        else:
            blob = t.numpy().astype(np_dtype, copy=False).tobytes()
        header[name] = {"dtype": tag, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * ((8 - len(head) % 8) % 8)
    return struct.pack("<Q", len(head)) + head + b"".join(blobs)


def save_file(tensors, path, metadata=None):
    """Writes tensors (an ordered dict name -> tensor) to path atomically."""
    data = to_bytes(tensors, metadata)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def save_checked(tensors, path, metadata=None):
    """save_file, then reads the file back and asserts it holds exactly
    tensors (names in order, bits) and metadata."""
    save_file(tensors, path, metadata)
    back, back_meta = load_file(path)
    assert back_meta == (metadata or {}) and list(back) == list(tensors)
    assert all(torch.equal(back[k], v) for k, v in tensors.items())


def load_file(path):
    """(tensors, metadata) of a safetensors file of F32, F64, I32, I64, U8 and BOOL."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    body = data[8 + n :]
    tensors = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(body[b:e], dtype=_NUMPY[info["dtype"]]).reshape(info["shape"])
        tensors[name] = torch.from_numpy(arr.copy())
    return tensors, metadata
