"""Finding and reading Tune experiment directories through pyarrow filesystems.

JSON and CSV only: ``experiment_state-*.json``, ``params.json``, ``result.json`` and
``progress.csv``. Nothing is ever unpickled; ``*.pkl`` files (and the pickle Tune writes under
``basic-variant-state-*.json``) are never opened. ``error.txt``/``error.pkl`` are only looked up
by name, to tell errored trials in directories without a state file.
"""

from __future__ import annotations

import csv
import fnmatch
import glob
import io
import json
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

STATE_PREFIX = "experiment_state-"
TRIAL_FILES = ("params.json", "result.json", "progress.csv")
ERROR_FILES = ("error.txt", "error.pkl")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Location:
    """A path in a pyarrow filesystem, and how to show it (local path or URI)."""

    fs: pafs.FileSystem
    path: str
    display: str

    def join(self, *parts: str) -> Location:
        return Location(
            self.fs, posixpath.join(self.path, *parts), posixpath.join(self.display, *parts)
        )

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/")) or self.display


def _has_glob(s: str) -> bool:
    return any(c in _GLOB_CHARS for c in s)


def resolve(source: str | os.PathLike, filesystem: pafs.FileSystem | None) -> list[Location]:
    """A path, glob or URI -> the existing locations it names.

    Raises
    ------
    FileNotFoundError
        Naming the path (or pattern) when nothing exists there.
    """
    text = os.fspath(source)
    if not isinstance(text, str):
        raise TypeError(f"meta-task paths must be str, got {type(text).__name__}: {text!r}")
    if filesystem is not None:
        path = text.split("://", 1)[1] if "://" in text else text
        if not _has_glob(path):
            return _existing(Location(filesystem, path.rstrip("/") or "/", text.rstrip("/")), text)
        head, pattern = _split_glob(path)
        display = text[: len(text) - len(path)] + head
        return _expand(
            Location(filesystem, head.rstrip("/") or "/", display.rstrip("/")), pattern, text
        )
    if "://" not in text:
        local = os.path.abspath(os.path.expanduser(text))
        fs = pafs.LocalFileSystem()
        if os.path.exists(local) or not _has_glob(local):
            return _existing(Location(fs, local, local), text)
        matches = sorted(glob.glob(local))
        if not matches:
            raise FileNotFoundError(f"no meta-task path matches {text!r}")
        return [Location(fs, m, m) for m in matches]
    uri, sep, query = text.partition("?")
    head, pattern = _split_glob(uri) if _has_glob(uri) else (uri, "")
    try:
        fs, path = pafs.FileSystem.from_uri(head + sep + query)
    except (ValueError, OSError) as exc:
        raise ValueError(f"cannot open meta-task URI {text!r}: {exc}") from None
    display = uri if not pattern else head
    base = Location(fs, path.rstrip("/") or "/", display.rstrip("/"))
    if not pattern:
        return _existing(base, text)
    return _expand(base, pattern, text)


def is_glob(source: str | os.PathLike) -> bool:
    """Whether a path or URI is a pattern (its matches may include things that are not
    meta-task sources)."""
    return isinstance(os.fspath(source), str) and _has_glob(os.fspath(source))


def _split_glob(path: str) -> tuple[str, str]:
    """A path with a pattern -> (the part before the first component with a pattern, the
    rest)."""
    parts = path.split("/")
    first = next(i for i, p in enumerate(parts) if _has_glob(p))
    return "/".join(parts[:first]), "/".join(parts[first:])


def _expand(base: Location, pattern: str, text: str) -> list[Location]:
    """The existing locations under ``base`` that ``pattern`` (components with shell
    wildcards) matches, sorted."""
    locs = [base]
    for part in pattern.split("/"):
        nxt = []
        for loc in locs:
            if not _has_glob(part):
                nxt.append(loc.join(part))
                continue
            try:
                infos = loc.fs.get_file_info(pafs.FileSelector(loc.path))
            except (FileNotFoundError, NotADirectoryError):
                continue
            nxt.extend(loc.join(i.base_name) for i in infos if fnmatch.fnmatch(i.base_name, part))
        locs = nxt
    found = [loc for loc in locs if loc.fs.get_file_info(loc.path).type != pafs.FileType.NotFound]
    if not found:
        raise FileNotFoundError(f"no meta-task path matches {text!r}")
    return sorted(found, key=lambda loc: loc.path)


def _existing(loc: Location, text: str) -> list[Location]:
    if loc.fs.get_file_info(loc.path).type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"meta-task path not found: {loc.display} (from {text!r})")
    return [loc]


def is_file(loc: Location) -> bool:
    return loc.fs.get_file_info(loc.path).type == pafs.FileType.File


def list_dir(loc: Location) -> tuple[list[str], list[str]]:
    """(subdirectory names, file names) of a directory, sorted."""
    infos = loc.fs.get_file_info(pafs.FileSelector(loc.path, recursive=False))
    dirs = sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)
    files = sorted(i.base_name for i in infos if i.type == pafs.FileType.File)
    return dirs, files


def read_bytes(loc: Location) -> bytes:
    with loc.fs.open_input_stream(loc.path) as f:
        return f.readall()


@dataclass
class Experiment:
    """A Tune experiment directory and its listing (trial listings too, where known)."""

    loc: Location
    dirs: list[str]
    files: list[str]
    trial_files: dict[str, list[str]] = field(default_factory=dict)


def _state_files(files: list[str]) -> list[str]:
    return [f for f in files if f.startswith(STATE_PREFIX) and f.endswith(".json")]


def _is_trial(files: list[str]) -> bool:
    return any(f in files for f in TRIAL_FILES)


def find_experiments(loc: Location) -> list[Experiment]:
    """The experiment at ``loc``, or the experiments directly below it.

    An experiment directory holds an ``experiment_state-*.json`` file or trial directories
    (subdirectories with ``params.json``, ``result.json`` or ``progress.csv``).
    """
    dirs, files = list_dir(loc)
    if _state_files(files):
        return [Experiment(loc, dirs, files)]
    if _is_trial(files):
        raise ValueError(
            f"{loc.display} is a trial directory; pass the experiment directory above it "
            f"({posixpath.dirname(loc.display)})"
        )
    listings = {d: list_dir(loc.join(d)) for d in dirs if not d.startswith(".")}
    trials = {d: sub_files for d, (_, sub_files) in listings.items() if _is_trial(sub_files)}
    if trials:
        return [Experiment(loc, dirs, files, trials)]
    out = []
    for d, (sub_dirs, sub_files) in listings.items():
        child = loc.join(d)
        if _state_files(sub_files):
            out.append(Experiment(child, sub_dirs, sub_files))
            continue
        known = {}
        for sd in sub_dirs:
            _, trial_files = list_dir(child.join(sd))
            if _is_trial(trial_files):
                known[sd] = trial_files
        if known:
            out.append(Experiment(child, sub_dirs, sub_files, known))
    if not out:
        raise ValueError(
            f"no Tune experiment under {loc.display}: expected an experiment_state-*.json "
            "file or trial directories (with params.json/result.json), here or one level below"
        )
    return out


@dataclass
class TrialRecord:
    """What one trial reported, from whichever source. ``rows`` (per-iteration results) are
    loaded lazily through ``loader``, which returns (rows, truncated, unreadable lines)."""

    trial_id: str
    config: dict | None
    errored: bool
    summary: dict | None = None
    last_result: dict | None = None
    logdir: str | None = None
    loader: Callable[[], tuple[list[dict], bool, int]] | None = None
    _rows: list[dict] | None = None
    truncated: bool = False
    bad_lines: int = 0

    def rows(self) -> list[dict]:
        if self._rows is None:
            self._rows, self.truncated, self.bad_lines = (
                self.loader() if self.loader else ([], False, 0)
            )
        return self._rows


def parse_result_json(data: bytes) -> tuple[list[dict], bool, int]:
    """JSON lines -> (results, last line truncated, other unreadable lines)."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    rows, truncated, bad = [], False, 0
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError:
            if i == len(lines) - 1:
                truncated = True
            else:
                bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad += 1
    return rows, truncated, bad


def _number(text: str) -> Any:
    try:
        return float(text) if any(c in text for c in ".eEn") else int(text)
    except ValueError:
        return text


def parse_progress_csv(data: bytes) -> tuple[list[dict], bool, int]:
    """Tune's progress.csv -> (results with "a/b" keys, last line truncated, bad lines)."""
    reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace")))
    header = next(reader, None)
    if not header:
        return [], False, 0
    lines = list(reader)
    rows, truncated, bad = [], False, 0
    for i, fields in enumerate(lines):
        if len(fields) != len(header):
            if i == len(lines) - 1:
                truncated = True
            else:
                bad += 1
            continue
        rows.append({k: _number(v) for k, v in zip(header, fields, strict=True) if v != ""})
    return rows, truncated, bad


def _result_loader(trial: Location, files: list[str] | None) -> Callable:
    def load() -> tuple[list[dict], bool, int]:
        for name, parse in (
            ("result.json", parse_result_json),
            ("progress.csv", parse_progress_csv),
        ):
            if files is not None and name not in files:
                continue
            try:
                data = read_bytes(trial.join(name))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                if files is None:  # S3 and friends report missing keys as plain OSError
                    continue
                raise
            return parse(data)
        return [], False, 0

    return load


_DECODER = json.JSONDecoder()


def _top_level(text: Any, keys: tuple[str, ...]) -> dict:
    """The given top-level entries of a JSON object (given as text or already parsed).

    Tune writes trial entries with ``indent=2``; there a raw newline followed by exactly two
    spaces and ``"key": `` can only start a top-level entry (newlines inside strings are
    escaped), so each wanted value is decoded on its own and the large blobs around them are
    skipped. Text in any other layout is parsed whole.
    """
    if not isinstance(text, str):
        return text
    if not (text.startswith('{\n  "') and not text.startswith("{\n   ")):
        return json.loads(text)
    out = {}
    for key in keys:
        marker = f'\n  "{key}": '
        i = text.find(marker)
        if i >= 0:
            out[key] = _DECODER.raw_decode(text, i + len(marker))[0]
    return out


def trials_from_state(exp: Experiment, data: bytes) -> list[TrialRecord]:
    """Parse an ``experiment_state-*.json`` (Ray 2.x layout: ``trial_data`` is a list of
    [trial JSON, run-metadata JSON] pairs). Raises ValueError/KeyError/TypeError if the file
    is not in that layout."""
    state = json.loads(data)
    out = []
    for item in state["trial_data"]:
        meta_json, run_json = item
        meta = _top_level(meta_json, ("trial_id", "config", "status", "relative_logdir"))
        run = _top_level(run_json, ("metric_analysis",))
        if not isinstance(meta, dict) or not isinstance(run, dict):
            raise TypeError("trial entries must be JSON objects")
        summary = run.get("metric_analysis")
        if not summary:  # the last result matters only when there is no summary
            run = _top_level(run_json, ("last_result",))
        logdir = meta.get("relative_logdir")
        config = meta.get("config")
        out.append(
            TrialRecord(
                trial_id=str(meta.get("trial_id", logdir)),
                config=config if isinstance(config, dict) else None,
                errored=meta.get("status") == "ERROR",
                summary=summary if isinstance(summary, dict) and summary else None,
                last_result=None if summary else run.get("last_result") or None,
                logdir=logdir if isinstance(logdir, str) else None,
                loader=_result_loader(exp.loc.join(logdir), None)
                if isinstance(logdir, str)
                else None,
            )
        )
    return out


def trial_from_files(loc: Location, files: list[str]) -> TrialRecord:
    """A trial directory without state: config from params.json (else the first result),
    errored if error.txt/error.pkl exist (they are not opened)."""
    config = None
    if "params.json" in files:
        try:
            config = json.loads(read_bytes(loc.join("params.json")))
        except ValueError:
            config = None
    record = TrialRecord(
        trial_id=loc.name,
        config=config if isinstance(config, dict) else None,
        errored=any(f in files for f in ERROR_FILES),
        logdir=loc.name,
        loader=_result_loader(loc, files),
    )
    if record.config is None:
        rows = record.rows()
        first = rows[0].get("config") if rows else None
        record.config = first if isinstance(first, dict) else None
    return record


def read_experiment(exp: Experiment, notes: dict[str, int]) -> tuple[list[TrialRecord], str]:
    """Trial records of an experiment: from the newest readable state file, plus trial
    directories the state does not list; from the trial directories alone otherwise.
    Returns the records and the reader used."""
    records: list[TrialRecord] | None = None
    states = sorted(_state_files(exp.files), reverse=True)
    for name in states:
        try:
            records = trials_from_state(exp, read_bytes(exp.loc.join(name)))
            break
        except (ValueError, KeyError, TypeError, OSError):
            notes["state_file_unreadable"] = notes.get("state_file_unreadable", 0) + 1
    reader = "experiment_state" if records is not None else "trial_files"
    if not states:
        notes["state_file_missing"] = 1
    records = records or []
    known = {r.logdir for r in records if r.logdir}
    extra = 0
    for d in exp.dirs:
        if d in known or d.startswith("."):
            continue
        files = exp.trial_files.get(d)
        if files is None:
            files = list_dir(exp.loc.join(d))[1]
        if _is_trial(files):
            records.append(trial_from_files(exp.loc.join(d), files))
            extra += 1
    if extra and reader == "experiment_state":
        notes["trials_not_in_state"] = extra
    return records, reader
