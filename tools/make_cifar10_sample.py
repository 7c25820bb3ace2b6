#!/usr/bin/env python3
"""Write tnet/cifar10_sample.npz, the small CIFAR-10 sample shipped inside tnet (the offline
try-out and the tests read it), from a CIFAR-10 pack stored as JPEGs.

usage: python tools/make_cifar10_sample.py PACK [--out tnet/cifar10_sample.npz]

PACK is an .npz holding {train,test}_jpeg (uint8, the JPEG files back to back),
{train,test}_offsets (int64, image i is jpeg[off[i]:off[i+1]]) and {train,test}_labels
(uint8, 0-9): the JPEG-quality-75 copy of CIFAR-10 that tnet's GPU results were measured on.
The sample keeps, in the pack's order, the first 50 training and the first 10 test images of
each class (500 and 100), decoded to raw pixels, so tnet reads it with numpy alone:
train_x, test_x uint8 [N,3,32,32] (RGB planes), train_y, test_y uint8 [N].
Needs numpy and Pillow (pip install pillow), only to make the file.
"""
import argparse
import io
import os

import numpy as np

PER_CLASS = {"train": 50, "test": 10}


def first_per_class(labels, k):
    """Indices, in order, of the first k images of each of the 10 classes."""
    keep = np.concatenate([np.flatnonzero(labels == c)[:k] for c in range(10)])
    if len(keep) != 10 * k:
        raise SystemExit(f"the pack has fewer than {k} images of some class")
    return np.sort(keep)


def decode(pack, split):
    from PIL import Image

    blob, offsets, labels = pack[f"{split}_jpeg"], pack[f"{split}_offsets"], pack[f"{split}_labels"]
    keep = first_per_class(labels, PER_CLASS[split])
    images = np.empty((len(keep), 3, 32, 32), np.uint8)
    for j, i in enumerate(keep):
        rgb = np.asarray(Image.open(io.BytesIO(blob[offsets[i]:offsets[i + 1]].tobytes())).convert("RGB"))
        images[j] = rgb.transpose(2, 0, 1)  # HWC -> the CIFAR binary's R, G, B planes
    return images, labels[keep].astype(np.uint8)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pack")
    ap.add_argument("--out", default=os.path.join(root, "tnet", "cifar10_sample.npz"))
    a = ap.parse_args()
    pack = np.load(a.pack, allow_pickle=False)
    train_x, train_y = decode(pack, "train")
    test_x, test_y = decode(pack, "test")
    np.savez_compressed(a.out, train_x=train_x, train_y=train_y, test_x=test_x, test_y=test_y)
    print(f"wrote {len(train_y)} train and {len(test_y)} test images to {a.out} "
          f"({os.path.getsize(a.out) // 1024} KB)")


if __name__ == "__main__":
    main()
