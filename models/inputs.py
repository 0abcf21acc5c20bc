"""Image inputs: decode uploaded bytes (PNG/JPEG, pillow), validate them, prepare them for a model.

Limits (each violation raises ``InvalidImageError`` with what to change; the API answers 4xx):

- ``MAX_IMAGE_BYTES`` = 10 MB per upload, ``MAX_PIXELS`` = 4096 x 4096 (16.7 M pixels)
- formats PNG and JPEG; 1 (grayscale) or 3 (RGB) channels; RGBA/LA/CMYK and palettes with
  transparency are refused (flatten the alpha channel first); width and height at least 1.

``prepare_digit`` turns any accepted image into MNIST's form: grayscale, 28 x 28, white digit on
black (a mostly light image, e.g. dark ink on paper, is inverted).
"""

from __future__ import annotations

import io
import warnings

import numpy as np

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_PIXELS = 4096 * 4096
FORMATS = ("PNG", "JPEG")


class InvalidImageError(ValueError):
    """The upload is not an image this API accepts; ``status`` is the HTTP code to answer with."""

    def __init__(self, message: str, status: int = 422):
        self.status = status
        super().__init__(message)


MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")  # the PNG signature, JPEG's start-of-image marker


def decode_image(blob: bytes) -> np.ndarray:
    """PNG/JPEG bytes -> uint8 ``[height, width]`` (grayscale) or ``[height, width, 3]`` (RGB)."""
    from PIL import Image, UnidentifiedImageError

    if not blob:
        raise InvalidImageError("the upload is empty (0 bytes); send a PNG or JPEG file", 422)
    if len(blob) > MAX_IMAGE_BYTES:
        raise InvalidImageError(
            f"the upload is {len(blob):,} bytes; the limit is {MAX_IMAGE_BYTES:,} bytes (10 MB): send a smaller image",
            413,
        )
    if not blob.startswith(MAGIC):  # before any decoder runs: no other format is parsed at all
        raise InvalidImageError(
            "the upload is not a PNG or JPEG image (its first bytes are neither signature); send a PNG or JPEG file",
            415,
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(blob), formats=list(FORMATS))
            fmt = img.format
            width, height = img.size
            if width * height > MAX_PIXELS:
                raise InvalidImageError(
                    f"the image is {width}x{height} = {width * height:,} pixels; the limit "
                    f"is {MAX_PIXELS:,} (4096x4096): resize it",
                    413,
                )
            img.load()
    except InvalidImageError:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):  # Pillow refuses it at open: too many pixels
        raise InvalidImageError(
            f"the image has more pixels than this server decodes; the limit is {MAX_PIXELS:,} (4096x4096): resize it",
            413,
        ) from None
    except UnidentifiedImageError:
        raise InvalidImageError(
            "the upload is not a PNG or JPEG image this server can read; send a PNG or JPEG file", 415
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InvalidImageError(
            f"the image could not be decoded ({exc}); it may be truncated or corrupt", 422
        ) from None
    if fmt not in FORMATS:
        raise InvalidImageError(f"images must be PNG or JPEG; got {fmt}", 415)
    return check_array(_to_array(img))


def _to_array(img) -> np.ndarray:
    mode = img.mode
    if mode == "P":
        if "transparency" in img.info:
            raise InvalidImageError(
                "the image has a transparent palette (an alpha channel); flatten it onto a "
                "background and send 1 (grayscale) or 3 (RGB) channels"
            )
        img, mode = img.convert("RGB"), "RGB"
    if mode in ("1", "L"):
        return np.asarray(img.convert("L"), dtype=np.uint8)
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        a = np.asarray(img, dtype=np.float64)
        top = a.max() if a.max() > 0 else 1.0
        return np.round(a / top * 255).astype(np.uint8)
    if mode == "RGB":
        return np.asarray(img, dtype=np.uint8)
    channels = len(img.getbands())
    raise InvalidImageError(
        f"the image has {channels} channels ({mode}); send 1 (grayscale) or 3 (RGB) channels"
        + (" (flatten the alpha channel first)" if "A" in mode else "")
    )


def check_array(image: np.ndarray) -> np.ndarray:
    """Validate an image array: ``[h, w]`` or ``[h, w, 1|3]``, non-empty, within ``MAX_PIXELS``."""
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3):
        raise InvalidImageError(f"an image must be [height, width] or [height, width, channels]; got shape {a.shape}")
    if a.ndim == 3 and a.shape[2] != 3:
        raise InvalidImageError(f"the image has {a.shape[2]} channels; send 1 (grayscale) or 3 (RGB) channels")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise InvalidImageError(f"the image has zero size ({a.shape[1]}x{a.shape[0]}); send a non-empty image")
    if a.shape[0] * a.shape[1] > MAX_PIXELS:
        raise InvalidImageError(f"the image has {a.shape[0] * a.shape[1]:,} pixels; the limit is {MAX_PIXELS:,}", 413)
    if a.dtype != np.uint8:
        if not np.all(np.isfinite(a)):
            raise InvalidImageError("the image contains NaN or infinite values")
        if a.min() < 0 or a.max() > 255:
            raise InvalidImageError("pixel values must lie in 0..255 (or 0..1 for floats)")
        a = np.round(a * 255 if a.max() <= 1.0 else a).astype(np.uint8)
    return a


def to_gray(image: np.ndarray) -> np.ndarray:
    a = check_array(image)
    if a.ndim == 3:
        a = np.round(a.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).astype(np.uint8)
    return a


def prepare_digit(image: np.ndarray) -> np.ndarray:
    """Any accepted image -> uint8 ``[28, 28]``, white digit on black (MNIST's form)."""
    from PIL import Image

    g = to_gray(image)
    border = np.concatenate([g[0], g[-1], g[:, 0], g[:, -1]])
    if border.mean() > 127:  # light background: dark ink on paper -> invert
        g = 255 - g
    if g.shape != (28, 28):
        g = np.asarray(Image.fromarray(g).resize((28, 28), Image.Resampling.BILINEAR), dtype=np.uint8)
    return g


def prepare_rgb(image: np.ndarray, size: int) -> np.ndarray:
    """Any accepted image -> uint8 ``[size, size, 3]`` RGB (for pretrained vision transformers)."""
    from PIL import Image

    a = check_array(image)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    return np.asarray(Image.fromarray(a).resize((size, size), Image.Resampling.BICUBIC), dtype=np.uint8)


def encode_png(image: np.ndarray) -> bytes:
    """uint8 grayscale or RGB array -> PNG bytes."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(check_array(image)).save(buf, format="PNG")
    return buf.getvalue()
