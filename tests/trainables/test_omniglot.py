"""Tests for trainables.omniglot (official zips, unpacked layout, packaged small sets)."""

from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest

from tests.trainables import formats
from trainables import omniglot, storage

pytest.importorskip("PIL")


def test_packaged_small_sets_offline(tmp_path) -> None:
    small1 = omniglot.list_omniglot_alphabets("background_small1", tmp_path, download=False)
    small2 = omniglot.list_omniglot_alphabets("background_small2", tmp_path, download=False)
    assert small1 == ["Balinese", "Early_Aramaic", "Greek", "Korean", "Latin"]
    assert len(small2) == 5 and "Tagalog" in small2


def test_load_real_alphabet_resized(tmp_path) -> None:
    greek = omniglot.load_omniglot("Greek", "background_small1", tmp_path, image_size=28)
    assert greek.images.shape == (24, 20, 28, 28, 1) and greek.images.dtype == np.float32
    assert greek.characters[0] == "character01" and len(greek.characters) == 24
    assert 0.0 <= greek.images.min() and greek.images.max() <= 1.0
    assert 0.0 < greek.images.mean() < 0.3  # strokes (1) are sparse on background (0)


def test_unpacked_layout_and_zip(tmp_path) -> None:
    root = formats.write_omniglot_layout(
        tmp_path / "images_evaluation", {"Alpha": 4, "Beta": 5}, drawings=3
    )
    assert omniglot.list_omniglot_alphabets("evaluation", tmp_path) == ["Alpha", "Beta"]
    beta = omniglot.load_omniglot("Beta", "evaluation", tmp_path, download=False)
    assert beta.images.shape == (5, 3, 105, 105, 1)
    # Character c has a black bar in columns [c*17, (c+1)*17): inverted to 1.
    assert beta.images[2, 0, 50, 2 * 17 + 3, 0] == 1.0 and beta.images[2, 0, 50, 100, 0] == 0.0

    zipped = tmp_path / "zipped"
    zipped.mkdir()
    with zipfile.ZipFile(zipped / "images_evaluation.zip", "w") as zf:
        for png in sorted(root.rglob("*.png")):
            zf.write(png, png.relative_to(tmp_path).as_posix())
    shutil.rmtree(root)
    from_zip = omniglot.load_omniglot("Beta", "evaluation", zipped, download=False)
    np.testing.assert_array_equal(from_zip.images, beta.images)


def test_missing_split_offline_names_zip(tmp_path) -> None:
    with pytest.raises(storage.DatasetNotFoundError) as err:
        omniglot.load_omniglot("Greek", "background", tmp_path, download=False)
    assert "images_background.zip" in str(err.value) and str(tmp_path) in str(err.value)
    assert "brendenlake/omniglot" in str(err.value)


def test_bad_arguments(tmp_path) -> None:
    with pytest.raises(ValueError, match="'train'"):
        omniglot.load_omniglot("Greek", "train", tmp_path)
    with pytest.raises(ValueError, match="Klingon"):
        omniglot.load_omniglot("Klingon", "background_small1", tmp_path)
    with pytest.raises(ValueError, match="image_size"):
        omniglot.load_omniglot("Greek", "background_small1", tmp_path, image_size=4)
