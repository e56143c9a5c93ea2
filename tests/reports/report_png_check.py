#!/usr/bin/env python3
"""Fails unless the PNG screenshot given as argv[1] shows a rendered page: it decodes the image
(stdlib only: zlib + PNG filters) and requires many distinct colors and a real share of
non-white pixels, which a blank or error page does not have."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"FAIL: {path} is not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                sys.exit(f"FAIL: unexpected PNG format depth={depth} color={ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    out = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(bytes(line))
        prev = line
    return w, h, bpp, out


w, h, bpp, rows = pixels(sys.argv[1])
colors, ink = set(), 0
for y in range(0, h, 2):
    row = rows[y]
    for x in range(0, w, 2):
        px = row[x * bpp:x * bpp + 3]
        colors.add(px)
        ink += px != b"\xff\xff\xff"
share = ink / ((h // 2) * (w // 2))
print(f"screenshot {w}x{h}: {len(colors)} colors, {share:.1%} non-white")
if len(colors) < 20 or share < 0.02:
    sys.exit("FAIL: the screenshot looks blank")
