#!/usr/bin/env python3
"""What a PNG shows, for the page test (tests/integration/test_report_html.c): decoded
with the standard library alone (zlib), it prints
    size WxH
    distinct N          (distinct colours, counted up to 10000)
    near R,G,B yes|no   (for each colour given: some pixel within 8 of it)
Usage: png_colours.py FILE.png [R,G,B ...]. Exit 1 when FILE is not a PNG
it can read (8-bit greyscale, RGB, grey+alpha or RGBA, not interlaced)."""
import struct
import sys
import zlib


def chunks(data):
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(raw, width, height, bpp):
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 0xFF
        rows.append(line)
        prev = line
    return rows


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        print("not a PNG")
        return 1
    idat, header = b"", None
    for kind, body in chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        print("unsupported PNG: depth %d, colour type %d" % (depth, colour))
        return 1
    rows = unfilter(zlib.decompress(idat), width, height, channels)
    wanted = [tuple(int(x) for x in arg.split(",")) for arg in sys.argv[2:]]
    seen, near = set(), [False] * len(wanted)
    for line in rows:
        for x in range(0, len(line), channels):
            px = tuple(line[x:x + channels])
            rgb = px[:3] if channels >= 3 else (px[0],) * 3
            if len(seen) < 10000:
                seen.add(rgb)
            for i, w in enumerate(wanted):
                if not near[i] and all(abs(p - q) <= 8 for p, q in zip(rgb, w)):
                    near[i] = True
    print("size %dx%d" % (width, height))
    print("distinct %d" % len(seen))
    for w, hit in zip(wanted, near):
        print("near %d,%d,%d %s" % (w + ("yes" if hit else "no",)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
