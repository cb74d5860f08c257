#!/usr/bin/python3
"""Writes the seed corpus tests/fuzz/corpus/safetensors/: ok_* files are
valid (tests/test_io_bad.c checks they load), bad_* files each break one rule
(checked rejected). Plain Python, no torch needed."""
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "safetensors")
FIXTURE = os.path.join(HERE, "..", "fixtures", "softmax.safetensors")


def st(header, data=b"", pad=True, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def entry(dtype, shape, b, e):
    return {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def f64(*v):
    return struct.pack("<%dd" % len(v), *v)


def sample():
    h = {"__metadata__": {"format": "pt", "step": "12"}}
    data = b""
    shapes = [[], [3], [2, 2], [1, 2, 1], [1, 1, 2, 1], [2, 0]]
    for i, shape in enumerate(shapes):
        n = 1
        for d in shape:
            n *= d
        blob = f32(*[0.5 * k - i for k in range(n)])
        h[f"t{i}"] = entry("F32", shape, len(data), len(data) + len(blob))
        data += blob
    return h, data


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {}
    files["ok_empty"] = st({})
    h, d = sample()
    files["ok_sample_f32"] = st(h, d)
    files["ok_f64"] = st({"w": entry("F64", [2, 2], 0, 32)}, f64(1.0, -2.5, 3e300, float("nan")))
    files["ok_mixed_order"] = st(None, f64(1.0) + f32(2.0), raw_header=(
        b' {"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12], "x": [1, {"y": null}]},\n'
        b'  "b\\u00e9\\"": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}, "__metadata__": null}\t'))
    if os.path.exists(FIXTURE):
        with open(FIXTURE, "rb") as f:
            files["ok_fixture_softmax"] = f.read()
    files["bad_overlap"] = st({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}, bytes(12))
    files["bad_gap"] = st({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}, bytes(12))
    files["bad_size_mismatch"] = st({"a": entry("F32", [3, 4], 0, 40)}, bytes(40))
    files["bad_truncated"] = st(h, d)[:-3]
    files["bad_header_too_long"] = struct.pack("<Q", 1 << 40) + b"{}"
    files["bad_not_json"] = st(None, raw_header=b'{"a": [1, 2')
    files["ok_bf16"] = st({"a": entry("BF16", [2], 0, 4)}, bytes.fromhex("803f00c0"))
    files["ok_ints"] = st({"a": entry("I64", [1], 0, 8), "b": entry("U8", [2], 8, 10), "c": entry("BOOL", [1], 10, 11)},
                          struct.pack("<q", -5) + bytes([7, 255, 1]))
    files["bad_i16"] = st({"a": entry("I16", [2], 0, 4)}, bytes(4))
    files["bad_utf8"] = st(None, raw_header=b'{"\xff": {}}')
    files["bad_metadata_number"] = st({"__metadata__": {"k": 1}})
    files["bad_dup_name"] = st(None, bytes(8), raw_header=(
        b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'))
    files["bad_nine_dims"] = st({"a": entry("F32", [1] * 9, 0, 4)}, bytes(4))
    files["bad_overflow"] = st({"a": entry("F64", [2147483647] * 4, 0, 8)}, bytes(8))
    # checksums: a file whose metadata says tapegrad wrote it (a key one
    # bit from "tapegrad.crc32") without its table; a table listing a
    # tensor the file does not have (core/io/checksum.c)
    table = {"__metadata__": "%08x" % zlib.crc32(b"a\0F32\0" b"1\0"), "a": "%08x" % zlib.crc32(bytes(4))}
    files["bad_damaged_table_key"] = st({"__metadata__": {"tapegrad.Crc32": json.dumps(table)},
                                         "a": entry("F32", [1], 0, 4)}, bytes(4))
    files["bad_table_extra_entry"] = st({"__metadata__": {"tapegrad.crc32": json.dumps(dict(table, b=table["a"]))},
                                         "a": entry("F32", [1], 0, 4)}, bytes(4))
    files["ok_table"] = st({"__metadata__": {"tapegrad.crc32": json.dumps(table)}, "a": entry("F32", [1], 0, 4)},
                           bytes(4))
    for name, data in files.items():
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"{len(files)} seeds in {OUT}")


if __name__ == "__main__":
    main()
