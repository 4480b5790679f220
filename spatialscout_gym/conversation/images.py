"""Captures as a vision-language model receives them (docs/protocol.md section 3).

A render of ``W x H`` pixels is delivered as a JPEG (quality 82) whose longer side is at most
384 px. A point ``(u_d, v_d)`` marked on the delivered ``W_d x H_d`` image maps back to the render
grid by ``u = (u_d + 1/2) * W / W_d - 1/2`` and ``v = (v_d + 1/2) * H / H_d - 1/2``; every image
message states this formula with the numbers filled in (:func:`conversion_text`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from spatialscout_gym.core.run_files import FRAMES_DIR, frame_file_name

__all__ = ["DeliveredImage", "encode_for_model", "conversion_text", "MAX_SIDE_PX", "JPEG_QUALITY"]

MAX_SIDE_PX = 384
"""Longest side of a delivered image, pixels (docs/protocol.md section 3, which gives the reason).
A model agent can use another value (``image_max_side``, ``--image-max-side``); the run records it
(``harness.json``, ``result.json``'s ``model.image_max_side_px``)."""
JPEG_QUALITY = 82
"""JPEG quality of delivered images."""


@dataclass(frozen=True)
class DeliveredImage:
    """One capture as sent to a model.

    Attributes
    ----------
    frame_id : int
        The episode's frame id.
    jpeg : bytes
        The JPEG file.
    width, height : int
        Delivered size ``W_d x H_d``, pixels.
    render_width, render_height : int
        Render grid ``W x H`` the tools use, pixels.
    """

    frame_id: int
    jpeg: bytes
    width: int
    height: int
    render_width: int
    render_height: int

    @property
    def file_name(self) -> str:
        """The frame's file in a run directory (``frames/frame_003.png``): the trace refers to
        images by this name, never by their bytes."""
        return f"{FRAMES_DIR}/{frame_file_name(self.frame_id)}"

    def reference(self) -> dict:
        """The JSON-able stand-in used in traces: frame id, file name and both sizes."""
        return {"type": "image", "frame_id": self.frame_id, "file": self.file_name,
                "delivered_wh": [self.width, self.height],
                "render_wh": [self.render_width, self.render_height]}


def delivered_size(width: int, height: int, max_side: int = MAX_SIDE_PX) -> tuple[int, int]:
    """``(W_d, H_d)``: the render size scaled so that the longer side is at most ``max_side``."""
    scale = min(1.0, max_side / max(width, height))
    return max(1, int(round(width * scale))), max(1, int(round(height * scale)))


def encode_for_model(image: np.ndarray, frame_id: int, *, max_side: int = MAX_SIDE_PX,
                     quality: int = JPEG_QUALITY) -> DeliveredImage:
    """Downscale (Lanczos) an RGB render to at most ``max_side`` px and encode it as JPEG.

    Parameters
    ----------
    image : ndarray, shape (H, W, 3), uint8
        The render.
    frame_id : int
    max_side : int
        Longest delivered side, pixels.
    quality : int
        JPEG quality (1-95).
    """
    from PIL import Image
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"expected an RGB image of shape (H, W, 3) and dtype uint8, got shape "
                         f"{arr.shape} and dtype {arr.dtype}")
    h, w = arr.shape[:2]
    wd, hd = delivered_size(w, h, max_side)
    pil = Image.fromarray(arr)
    if (wd, hd) != (w, h):
        pil = pil.resize((wd, hd), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    return DeliveredImage(int(frame_id), buf.getvalue(), wd, hd, w, h)


def conversion_text(img: DeliveredImage) -> str:
    """One sentence stating the delivered size and the pixel conversion with its numbers."""
    if (img.width, img.height) == (img.render_width, img.render_height):
        return (f"This image is delivered at the render size {img.width}x{img.height}; its pixel "
                f"coordinates are render-grid coordinates (no conversion needed).")
    return (f"This image is delivered at {img.width}x{img.height} px; the render grid is "
            f"{img.render_width}x{img.render_height}. Convert a point (u_d, v_d) marked on it to render "
            f"pixels before triangulating: u = (u_d + 0.5) * {img.render_width}/{img.width} - 0.5, "
            f"v = (v_d + 0.5) * {img.render_height}/{img.height} - 0.5.")
