"""Omniglot loader: one alphabet at a time, from the official zips or their unpacked layout.

Layout (Lake et al. 2015, https://github.com/brendenlake/omniglot, MIT licence)::

    images_<split>/<alphabet>/<characterNN>/<nnnn_nn>.png      (105x105, 20 drawings each)

``split`` is ``"background"`` (30 alphabets) or ``"evaluation"`` (20 alphabets), fetched from
GitHub when missing and ``download=True``; ``"background_small1"`` and ``"background_small2"``
(5 alphabets each) ship inside this package, so they always work offline. For a split, the
directory ``<data_dir>/images_<split>/`` is used if present, else ``<data_dir>/images_<split>.zip``
(read in place, never unpacked), else the packaged copy, else a download.
"""

from __future__ import annotations

import functools
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainables import storage

__all__ = ["OMNIGLOT_SPLITS", "OmniglotAlphabet", "list_omniglot_alphabets", "load_omniglot"]

OMNIGLOT_ORIGIN = "https://github.com/brendenlake/omniglot/raw/master/python/"
OMNIGLOT_SPLITS = ("background", "evaluation", "background_small1", "background_small2")
NATIVE_SIZE = 105


@dataclass(frozen=True)
class OmniglotAlphabet:
    """All drawings of one alphabet.

    Attributes
    ----------
    name : str
        Alphabet folder name (e.g. ``"Greek"``).
    characters : tuple of str
        Character folder names, sorted.
    images : numpy.ndarray
        float32 array (n_characters, n_drawings, size, size, 1) in [0, 1]; strokes are 1 and
        background 0 (the PNGs' black-on-white, inverted).
    """

    name: str
    characters: tuple[str, ...]
    images: np.ndarray


def _check_split(split: str) -> None:
    if split not in OMNIGLOT_SPLITS:
        raise ValueError(f"unknown Omniglot split {split!r}; expected one of {OMNIGLOT_SPLITS}")


def _locate(split: str, directory: Path, download: bool) -> Path:
    """Directory or zip holding ``images_<split>``."""
    root = f"images_{split}"
    for candidate in (directory / root, directory / f"{root}.zip"):
        if candidate.exists():
            return candidate
    packaged = storage.PACKAGE_DATA / "omniglot" / f"{root}.zip"
    if packaged.is_file():
        return packaged
    return storage.fetch(
        "Omniglot", f"{root}.zip", directory, f"{OMNIGLOT_ORIGIN}{root}.zip", download=download
    )


def _entries(source: Path, root: str) -> Iterator[tuple[str, str, str]]:
    """Yield ``(alphabet, character, member)`` for every PNG of the split."""
    if source.is_dir():
        for png in sorted(source.glob("*/*/*.png")):
            yield png.parent.parent.name, png.parent.name, str(png)
        return
    with zipfile.ZipFile(source) as zf:
        for member in sorted(zf.namelist()):
            parts = member.split("/")
            if len(parts) == 4 and parts[0] == root and parts[3].endswith(".png"):
                yield parts[1], parts[2], member


def _decode(raw: bytes, size: int) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as img:
        gray = img.convert("L")
        if gray.size != (size, size):
            gray = gray.resize((size, size), Image.Resampling.BOX)
        pixels = np.asarray(gray, dtype=np.float32) / np.float32(255.0)
    return (np.float32(1.0) - pixels)[..., None]


@functools.lru_cache(maxsize=4)
def _alphabets(source: str, root: str) -> tuple[str, ...]:
    return tuple(sorted({a for a, _, _ in _entries(Path(source), root)}))


def list_omniglot_alphabets(
    split: str = "background", data_dir: str | Path | None = None, *, download: bool = True
) -> list[str]:
    """Alphabet names of a split, sorted.

    Parameters
    ----------
    split : {"background", "evaluation", "background_small1", "background_small2"}
        Which set.
    data_dir : str or path-like, optional
        Dataset directory; see :func:`trainables.storage.data_dir`.
    download : bool
        Fetch the official zip when absent.

    Returns
    -------
    list of str
        Alphabet folder names.
    """
    _check_split(split)
    source = _locate(split, storage.data_dir(data_dir), download)
    return list(_alphabets(str(source), f"images_{split}"))


@functools.lru_cache(maxsize=8)
def _load_cached(source: str, root: str, alphabet: str, size: int) -> OmniglotAlphabet:
    path = Path(source)
    by_char: dict[str, list[str]] = {}
    for alpha, char, member in _entries(path, root):
        if alpha == alphabet:
            by_char.setdefault(char, []).append(member)
    if not by_char:
        raise ValueError(
            f"alphabet {alphabet!r} not found in {source}; available: "
            f"{list(_alphabets(source, root))}"
        )
    n_draw = min(len(v) for v in by_char.values())
    if n_draw < 2 or len(by_char) < 2:
        raise ValueError(
            f"alphabet {alphabet!r} in {source} needs >= 2 characters with >= 2 drawings each"
        )
    chars = sorted(by_char)
    images = np.empty((len(chars), n_draw, size, size, 1), dtype=np.float32)
    zf = None if path.is_dir() else zipfile.ZipFile(path)
    try:
        for i, char in enumerate(chars):
            for j, member in enumerate(sorted(by_char[char])[:n_draw]):
                raw = Path(member).read_bytes() if zf is None else zf.read(member)
                images[i, j] = _decode(raw, size)
    finally:
        if zf is not None:
            zf.close()
    images.setflags(write=False)
    return OmniglotAlphabet(name=alphabet, characters=tuple(chars), images=images)


def load_omniglot(
    alphabet: str,
    split: str = "background",
    data_dir: str | Path | None = None,
    *,
    image_size: int = NATIVE_SIZE,
    download: bool = True,
) -> OmniglotAlphabet:
    """Load every drawing of one alphabet (cached per process).

    Parameters
    ----------
    alphabet : str
        Alphabet folder name, e.g. ``"Greek"``.
    split : {"background", "evaluation", "background_small1", "background_small2"}
        Which set the alphabet belongs to.
    data_dir : str or path-like, optional
        Dataset directory; see :func:`trainables.storage.data_dir`.
    image_size : int
        Side length after resizing (box filter); 105 keeps the native resolution.
    download : bool
        Fetch the official zip when absent.

    Returns
    -------
    OmniglotAlphabet
        Images (n_characters, n_drawings, image_size, image_size, 1), float32 in [0, 1].
    """
    _check_split(split)
    if int(image_size) < 8:
        raise ValueError(f"image_size must be >= 8, got {image_size!r}")
    source = _locate(split, storage.data_dir(data_dir), download)
    return _load_cached(str(source), f"images_{split}", alphabet, int(image_size))
