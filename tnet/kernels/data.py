"""Batch gather for the data loader: pick images and labels by index on the device,
optionally with random crop (zero or reflect padding) and horizontal flip."""
import torch
import triton.language as tl

from .autotune import jit
from .._device import INTERPRET
from .launch import FLOATS, cdiv, check, check_float, next_power_of_2

# Images per program. The interpreter pays per program and per op, not per element, so it
# gets a few big programs; on the GPU one CIFAR image (3072 floats) per program keeps the
# registers per thread small and still gives a batch of 128 plenty of programs.
IMGS = 8 if INTERPRET else 1
NUM_WARPS = 8
PADDING_MODES = ("zeros", "reflect")  # gather_kernel's PAD is the index


@jit
def gather_kernel(src_ptr, labels_ptr, idx_ptr, shift_ptr, flip_ptr, out_ptr, out_labels_ptr,
                  B, C, H, W,
                  IMGS: tl.constexpr, BLOCK: tl.constexpr, AUGMENT: tl.constexpr, PAD: tl.constexpr):
    """out[b] = src[idx[b]], out_labels[b] = labels[idx[b]]; src [N,C,H,W], idx [B] int64.
    AUGMENT: out[b,c,h,w] = src[idx[b],c,h+dy,v+dx] with v = W-1-w if flip[b] else w, outside
    the image 0 (PAD 0) or its mirror image across the edge (PAD 1, reflect: -1 reads 1);
    shift [B,2] int32 (dy, dx), flip [B] int32."""
    rows = tl.program_id(0).to(tl.int64) * IMGS + tl.arange(0, IMGS)
    row_ok = rows < B
    src_rows = tl.load(idx_ptr + rows, mask=row_ok, other=0)
    hw = H * W
    chw = C * hw
    e = tl.arange(0, BLOCK)
    mask = row_ok[:, None] & (e < chw)[None, :]
    if AUGMENT:
        c = e // hw
        h = (e // W) % H
        w = e % W
        dy = tl.load(shift_ptr + 2 * rows, mask=row_ok, other=0)
        dx = tl.load(shift_ptr + 2 * rows + 1, mask=row_ok, other=0)
        flip = tl.load(flip_ptr + rows, mask=row_ok, other=0)
        hs = h[None, :] + dy[:, None]
        ws = tl.where(flip[:, None] != 0, W - 1 - w[None, :], w[None, :]) + dx[:, None]
        if PAD == 1:
            hs = tl.where(hs < 0, -hs, tl.where(hs >= H, 2 * (H - 1) - hs, hs))
            ws = tl.where(ws < 0, -ws, tl.where(ws >= W, 2 * (W - 1) - ws, ws))
            # a shift of the image's size or more would reflect out of it: clamp, never read outside
            hs = tl.minimum(tl.maximum(hs, 0), H - 1)
            ws = tl.minimum(tl.maximum(ws, 0), W - 1)
        # pixels shifted in from outside the image are the zero padding
        inside = (hs >= 0) & (hs < H) & (ws >= 0) & (ws < W)
        offs = src_rows[:, None] * chw + (c * hw)[None, :] + hs * W + ws
        x = tl.load(src_ptr + offs, mask=mask & inside, other=0.0)
    else:
        x = tl.load(src_ptr + src_rows[:, None] * chw + e[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * chw + e[None, :], x.to(out_ptr.dtype.element_ty), mask=mask)
    label = tl.load(labels_ptr + src_rows, mask=row_ok, other=0)
    tl.store(out_labels_ptr + rows, label, mask=row_ok)


def gather(images, labels, idx, shifts=None, flips=None, out=None, padding_mode="zeros"):
    """Return (x [B,C,H,W], y [B] int64) with x[b] = images[idx[b]], y[b] = labels[idx[b]].

    images [N,C,H,W] float32, float16 or bfloat16, labels [N] int64, idx [B] int64, all contiguous on one device.
    Indices are not bounds-checked on the device: the caller must keep them in [0, N).
    With shifts [B,2] int32 (dy, dx) and flips [B] int32, image b is read shifted by
    (dy, dx), then mirrored left-right when flips[b] != 0; padding_mode says what lies outside
    the image: "zeros", or "reflect" (torch's F.pad mode: row -1 is row 1), which needs
    |dy| < H and |dx| < W (larger shifts are clamped into the image, not checked: they are
    on the device).
    out: a pair (x, y) of contiguous tensors of those shapes to write into (a captured step's
    input buffers), x of any of the three float dtypes (the images are cast to it: a 16-bit
    batch from fp32 images in the same pass); by default the batch is fresh memory of the
    images' dtype.
    """
    check(images.dim() == 4, lambda: f"images must be [N,C,H,W], got shape {tuple(images.shape)}")
    check_float("gather", images, "images")
    n, c, h, w = images.shape
    check(labels.shape == (n,), lambda: f"labels must be [{n}], got {tuple(labels.shape)}")
    check(labels.dtype == torch.int64, lambda: f"labels must be int64, got {labels.dtype}")
    check(idx.dim() == 1, lambda: f"idx must be [B], got shape {tuple(idx.shape)}")
    check(idx.dtype == torch.int64, lambda: f"idx must be int64, got {idx.dtype}")
    b = idx.shape[0]
    augment = shifts is not None or flips is not None
    check(padding_mode in PADDING_MODES, lambda: f"padding_mode must be 'zeros' or 'reflect', got {padding_mode!r}")
    tensors = [images, labels, idx]
    if augment:
        check(shifts is not None and flips is not None, "shifts and flips go together")
        check(shifts.shape == (b, 2) and shifts.dtype == torch.int32,
              lambda: f"shifts must be [{b},2] int32, got {tuple(shifts.shape)} {shifts.dtype}")
        check(flips.shape == (b,) and flips.dtype == torch.int32,
              lambda: f"flips must be [{b}] int32, got {tuple(flips.shape)} {flips.dtype}")
        tensors += [shifts, flips]
    for t in tensors:
        check(t.device == images.device, lambda: f"all inputs must be on {images.device}, got {t.device}")
        check(t.is_contiguous(), lambda: f"inputs must be contiguous (shape {tuple(t.shape)} is not)")
    block = next_power_of_2(c * h * w)
    check(block <= 1 << 16, lambda: f"an image of {c}x{h}x{w} = {c * h * w} values exceeds 65536")

    if out is None:
        out = (torch.empty((b, c, h, w), dtype=images.dtype, device=images.device),
               torch.empty((b,), dtype=torch.int64, device=images.device))
    out, out_labels = out
    check(out.shape == (b, c, h, w) and out.dtype in FLOATS and out.device == images.device
          and out.is_contiguous() and out_labels.shape == (b,) and out_labels.dtype == torch.int64
          and out_labels.device == images.device and out_labels.is_contiguous(),
          lambda: f"out must be contiguous ([{b},{c},{h},{w}] float, [{b}] int64) on {images.device}, "
                  f"got {tuple(out.shape)} {out.dtype} and {tuple(out_labels.shape)} {out_labels.dtype}")
    if b == 0:
        return out, out_labels
    grid = (cdiv(b, IMGS),)
    gather_kernel[grid](images, labels, idx, shifts if augment else idx, flips if augment else idx,
                        out, out_labels, b, c, h, w,
                        IMGS=IMGS, BLOCK=block, AUGMENT=augment, PAD=PADDING_MODES.index(padding_mode),
                        num_warps=NUM_WARPS)
    return out, out_labels
