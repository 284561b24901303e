"""Where dataset files live, how they are downloaded, and how legacy pickles are read.

Every loader in :mod:`trainables.datasets` resolves its directory with :func:`data_dir`:

1. the ``data_dir`` argument (or the trainable's ``data_dir`` config key), else
2. the environment variable ``RMBO_TUNE_DATA_DIR``, else
3. the Keras dataset cache, ``$KERAS_HOME/datasets`` or ``~/.keras/datasets``, so files already
   fetched by ``keras.datasets.*.load_data()`` are reused.

On a cluster, point ``RMBO_TUNE_DATA_DIR`` (or ``data_dir``) at a shared or pre-populated local
directory: workers then read the files instead of downloading them concurrently.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

ENV_VAR = "RMBO_TUNE_DATA_DIR"
PACKAGE_DATA = Path(__file__).resolve().parent / "data"

# Globals needed to rebuild the numpy arrays stored in the CIFAR python pickles, written by
# numpy < 2 (``numpy.core``) or numpy >= 2 (``numpy._core``); protocol 5 uses ``_frombuffer``,
# and protocol-2 pickles written by Python 3 spell bytes as ``_codecs.encode(text, "latin1")``.
_ALLOWED_PICKLE_GLOBALS = frozenset(
    {
        ("_codecs", "encode"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }
)


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is absent and could not be downloaded (offline, or downloads disabled)."""


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the dataset directory.

    Parameters
    ----------
    path : str or path-like, optional
        Explicit directory. When ``None``, ``$RMBO_TUNE_DATA_DIR`` is used, then the Keras
        dataset cache (``$KERAS_HOME/datasets`` or ``~/.keras/datasets``).

    Returns
    -------
    pathlib.Path
        Absolute, user-expanded directory (not created here).
    """
    if path is None or str(path) == "":
        env = os.environ.get(ENV_VAR, "")
        if env:
            path = env
        else:
            keras_home = os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
            path = os.path.join(keras_home, "datasets")
    return Path(path).expanduser().resolve()


def missing_file_error(
    dataset: str, filename: str, directory: Path, source: str, cause: BaseException | None = None
) -> DatasetNotFoundError:
    """Build the error raised when ``filename`` is neither present nor downloadable.

    Parameters
    ----------
    dataset : str
        Human-readable dataset name.
    filename : str
        The file (or folder) the loader needs.
    directory : pathlib.Path
        Where it must be placed.
    source : str
        URL it can be fetched from.
    cause : BaseException, optional
        The download error, if one was attempted.

    Returns
    -------
    DatasetNotFoundError
        The error to raise.
    """
    reason = f" (download failed: {cause})" if cause is not None else " (downloads disabled)"
    return DatasetNotFoundError(
        f"{dataset}: file '{filename}' not found in '{directory}'{reason}. Download it from "
        f"{source} and place it at '{directory / filename}', or pass data_dir=... / set "
        f"{ENV_VAR} to the directory that holds it."
    )


def fetch(
    dataset: str,
    filename: str,
    directory: Path,
    origin: str,
    *,
    download: bool = True,
    file_hash: str | None = None,
) -> Path:
    """Return ``directory / filename``, downloading it from ``origin`` when absent.

    The download goes to a temporary file in ``directory`` first and is renamed into place,
    so concurrent workers never read a partial file.

    Parameters
    ----------
    dataset : str
        Dataset name for error messages.
    filename : str
        File name inside ``directory``.
    directory : pathlib.Path
        Target directory (created when downloading).
    origin : str
        URL of the standard source.
    download : bool
        When False, never touch the network.
    file_hash : str, optional
        SHA-256 of the file, verified by Keras after download.

    Returns
    -------
    pathlib.Path
        Path of the local file.

    Raises
    ------
    DatasetNotFoundError
        If the file is absent and cannot be downloaded.
    """
    target = directory / filename
    if target.exists():
        return target
    if not download:
        raise missing_file_error(dataset, filename, directory, origin)
    try:
        import keras  # local import: only needed for downloads

        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".download-") as tmp:
            got = keras.utils.get_file(
                fname=filename,
                origin=origin,
                file_hash=file_hash,
                cache_dir=tmp,
                cache_subdir=".",
            )
            os.replace(got, target)
    except Exception as err:  # network, HTTP, hash or permission failure
        raise missing_file_error(dataset, filename, directory, origin, err) from err
    return target


def fetch_and_extract_tar(
    dataset: str,
    folder: str,
    directory: Path,
    origin: str,
    *,
    download: bool = True,
    file_hash: str | None = None,
) -> Path:
    """Return ``directory / folder``, fetching and unpacking ``origin`` (a .tar.gz) if needed.

    Parameters
    ----------
    dataset : str
        Dataset name for error messages.
    folder : str
        The top-level folder the archive contains (e.g. ``cifar-10-batches-py``).
    directory : pathlib.Path
        Where the folder must end up.
    origin : str
        URL of the archive.
    download : bool
        When False, never touch the network.
    file_hash : str, optional
        SHA-256 of the archive.

    Returns
    -------
    pathlib.Path
        The extracted folder.
    """
    target = directory / folder
    if target.is_dir():
        return target
    if not download:
        raise missing_file_error(dataset, folder, directory, origin)
    archive = fetch(
        dataset, origin.rsplit("/", 1)[-1], directory, origin, download=True, file_hash=file_hash
    )
    with tempfile.TemporaryDirectory(dir=directory, prefix=".extract-") as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        extracted = Path(tmp) / folder
        if not extracted.is_dir():
            raise missing_file_error(dataset, folder, directory, origin)
        if not target.exists():
            shutil.move(str(extracted), str(target))
    return target


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that can rebuild numpy arrays, dicts, lists and scalars, and nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refusing to load global '{module}.{name}' from a dataset pickle; the file is "
            "corrupted or malicious"
        )


def load_legacy_pickle(fileobj: IO[bytes]) -> Any:
    """Read one of the CIFAR "python version" batch files.

    These standard files are pickles (written by Python 2). Pickle can run code, so this is
    only ever called on files inside the dataset directory the user designates (see
    :func:`data_dir`), and it refuses every global except the numpy array constructors.

    Parameters
    ----------
    fileobj : binary file
        Open file.

    Returns
    -------
    object
        The unpickled object (a dict with bytes keys for CIFAR).
    """
    return _RestrictedUnpickler(fileobj, encoding="bytes").load()
