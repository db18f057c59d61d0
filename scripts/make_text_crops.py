#!/usr/bin/python3
"""Text-box crops of the text scenes as porttool samples (<id>.<input>.npy), for OCR models.

  scripts/make_text_crops.py --kind rec --scenes 000-007 OUT_DIR   # recognizer line crops
  scripts/make_text_crops.py --kind cls --scenes 008-023 OUT_DIR   # classifier crops, + 180 deg
  scripts/make_text_crops.py --kind det --scenes 008-023 OUT_DIR   # whole scenes for the detector

Each box of boxes.json becomes one sample: the box cut from the scene, resized (bilinear,
half-pixel centres) to height 48 keeping its aspect ratio, width at most 320 (rec) or 192 (cls),
normalised to (x / 255 - 0.5) / 0.5 and zero-padded on the right, as PaddleOCR's
resize_norm_img does. --kind cls also writes every crop rotated by 180 degrees (id suffix _r180)
and a labels file OUT_DIR.labels.json (0 upright, 1 rotated: PP-OCR cls's classes).
--kind det writes the whole scenes instead, normalised with ImageNet's mean and std (PP-OCR det;
what `--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225` does on the PNGs), for running the
detector outside porttool (scripts/ort_task_eval.js).
Needs only python3 with numpy (the PNGs are decoded here: Debian's python3 has no PIL by default).
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np


def read_png(path):
    """8-bit RGB/RGBA/gray non-interlaced PNG -> HxWx3 uint8."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        sys.exit(f"{path}: only 8-bit non-interlaced gray/RGB/RGBA PNGs are supported")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 255
        else:  # Sub, Average and Paeth depend on the pixel to the left: per pixel.
            cur = line.copy()
            for x in range(stride):
                a = cur[x - channels] if x >= channels else 0
                b = prev[x]
                if kind == 1:
                    p = a
                elif kind == 3:
                    p = (a + b) >> 1
                else:
                    c = prev[x - channels] if x >= channels else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (cur[x] + p) & 255
        out[y] = cur
        prev = cur
    img = out.reshape(height, width, channels)
    if channels < 3:
        img = np.repeat(img[:, :, :1], 3, axis=2)
    return img[:, :, :3]


def resize_bilinear(img, out_h, out_w):
    def taps(src, dst):
        f = np.clip((np.arange(dst) + 0.5) * src / dst - 0.5, 0, src - 1)
        i0 = np.floor(f).astype(int)
        return i0, np.minimum(i0 + 1, src - 1), (f - i0)[:, None]

    img = img.astype(np.float32)
    y0, y1, wy = taps(img.shape[0], out_h)
    x0, x1, wx = taps(img.shape[1], out_w)
    rows = img[y0] + (img[y1] - img[y0]) * wy[:, :, None]
    return rows[:, x0] + (rows[:, x1] - rows[:, x0]) * wx[None, :, :]


def crop_tensor(img, box, max_w, rotate):
    h, w = img.shape[:2]
    x0, y0, x1, y1 = [int(round(v)) for v in box]
    x0, x1 = max(0, min(x0, w)), max(0, min(x1, w))
    y0, y1 = max(0, min(y0, h)), max(0, min(y1, h))
    if x1 <= x0 or y1 <= y0:
        return None
    part = img[y0:y1, x0:x1]
    if rotate:
        part = part[::-1, ::-1]
    new_w = max(1, min(max_w, int(np.ceil(48 * part.shape[1] / part.shape[0]))))
    pixels = resize_bilinear(part, 48, new_w)
    out = np.zeros((1, 3, 48, max_w), dtype=np.float32)
    out[0, :, :, :new_w] = (pixels.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    return out


def scene_range(text):
    lo, _, hi = text.partition("-")
    return [f"{i:03d}" for i in range(int(lo), int(hi or lo) + 1)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "shared", "calib-images", "text-scenes")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--kind", choices=["rec", "cls", "det"], required=True)
    ap.add_argument("--scenes", default="000-023", help="scene range, e.g. 000-007")
    ap.add_argument("--scene-dir", default=default)
    ap.add_argument("--input", default="x", help="the model's input name (both PP-OCR: x)")
    args = ap.parse_args()
    with open(os.path.join(args.scene_dir, "boxes.json")) as f:
        boxes = json.load(f)
    os.makedirs(args.out_dir, exist_ok=True)
    max_w = 320 if args.kind == "rec" else 192
    labels, count = {}, 0
    for scene in scene_range(args.scenes):
        if scene not in boxes:
            continue
        img = read_png(os.path.join(args.scene_dir, scene + ".png"))
        if args.kind == "det":
            mean = np.array([0.485, 0.456, 0.406], np.float32)
            std = np.array([0.229, 0.224, 0.225], np.float32)
            t = ((img.astype(np.float32) / 255.0 - mean) / std).transpose(2, 0, 1)[None]
            np.save(os.path.join(args.out_dir, f"{scene}.{args.input}.npy"), t)
            count += 1
            continue
        for k, box in enumerate(boxes[scene]):
            for rotate in ([False, True] if args.kind == "cls" else [False]):
                t = crop_tensor(img, box, max_w, rotate)
                if t is None:
                    continue
                sample = f"{scene}_{k:02d}" + ("_r180" if rotate else "")
                np.save(os.path.join(args.out_dir, f"{sample}.{args.input}.npy"), t)
                labels[sample] = 1 if rotate else 0
                count += 1
    if args.kind == "cls":
        with open(args.out_dir.rstrip("/") + ".labels.json", "w") as f:
            json.dump(labels, f, indent=0)
    print(f"{count} {args.kind} crops from scenes {args.scenes} in {args.out_dir}")


if __name__ == "__main__":
    main()
