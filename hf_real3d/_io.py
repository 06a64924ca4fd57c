"""Files in and out: atomic file and folder writes (bad input never leaves a half-written
output behind), reading text, JSON and JSONL with errors that name the file and the line,
PNG figures, and where the library caches what it can recompute."""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d._runtime import check_stop, no_gc
from hf_real3d.errors import FormatError, InputError

UTF8_BOM = b"\xef\xbb\xbf"

try:  # a faster parser for the large prediction and reference files, when installed
    import orjson
except ImportError:  # pragma: no cover - a dependency; plain json gives the same values
    orjson = None

__all__ = ["atomic_path", "atomic_dir", "write_json", "read_json", "read_text", "FormatError",
           "remove_stale_temporaries", "umask", "check_out", "readable_as_written",
           "write_jsonl", "cache_root", "read_jsonl", "check_link", "plain_value",
           "model_folder"]


def first_repeat(keys: Iterable[Hashable]) -> tuple[int, int] | None:
    """(index of the first occurrence, index of its first repeat) of the first key that
    repeats in ``keys``, or None when every key is unique."""
    seen: dict[Hashable, int] = {}
    for i, k in enumerate(keys):
        if k in seen:
            return seen[k], i
        seen[k] = i
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporaries of ``path`` (``.<name>.<pid>.*.tmp`` / ``.old``) left by a
    process that no longer runs (killed with SIGKILL, a machine that lost power); a running
    writer's temporaries stay. Returns what was removed."""
    path = Path(path)
    removed = []
    if not path.parent.is_dir():
        return removed
    for p in path.parent.glob(f".{glob.escape(path.name)}.*"):
        parts = p.name[len(path.name) + 2:].split(".")
        if p.suffix not in (".tmp", ".old") or not parts[0].isdigit() or _alive(int(parts[0])):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def umask() -> int:
    """The process's file mode creation mask, read without changing it where Linux says it
    (``/proc/self/status``), else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def readable_as_written(folder: str | os.PathLike) -> None:
    """Give the files under ``folder`` that a library saved 0600 whatever the umask
    (``safetensors``: ``model.safetensors``) the mode ``open()`` would have given them."""
    for path in Path(folder).rglob("*"):
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600:
            _as_open_would(path)


def _as_open_would(path: Path, folder: bool = False) -> None:
    # mkstemp and mkdtemp make 0600 files and 0700 folders whatever the umask; what the
    # library writes follows the umask, as open() and mkdir() do, so colleagues can read it
    os.chmod(path, (0o777 if folder else 0o666) & ~umask())


def check_out(out: str | os.PathLike, *, name: str = "out", prefix: str = "",
              one_file: bool = False, **inputs: str | os.PathLike | None) -> Path:
    """Refuse an output (the argument ``name``) that is one of ``inputs`` (argument name ->
    path), lies inside one, or holds one; before any work. ``one_file``: ``out`` is one file,
    and only an input of the same path is refused. ``prefix``: what names an argument in the
    message (the command line passes ``--``). Returns ``out`` as a Path."""
    o = Path(out).expanduser().resolve()
    for key, given in inputs.items():
        if given is None or not str(given):
            continue
        i = Path(given).expanduser().resolve()
        arg = prefix + key
        if o == i:
            why = f"is the input {arg} {given}"
        elif one_file:
            continue
        elif o.is_relative_to(i):
            why = f"lies inside the input {arg} {given}"
        elif i.is_relative_to(o):
            why = f"holds the input {arg} {given}"
        else:
            continue
        raise InputError(f"{prefix}{name} {out} {why}: an output never replaces, holds or sits "
                         f"in an input; give {prefix}{name} a place of its own")
    return Path(out)


def model_folder(path: str | os.PathLike, option: str) -> dict[str, Any]:
    """The ``config.json`` of a saved transformers model folder given as ``option``, checked
    before anything loads it: a folder, its config, weights that are not git-lfs pointers; one
    line naming the folder and what it lacks otherwise (transformers would look for a Hub
    repository, or build fresh weights)."""
    p = Path(path).expanduser()
    fix = "give a folder written by save_pretrained (config.json and model.safetensors)"
    if not p.is_dir():
        raise (InputError if p.exists() else FileNotFoundError)(
            f"`{option}` {path}: {'a file' if p.exists() else 'no such folder'}; {fix}")
    try:
        cfg = json.loads((p / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"`{option}` {path}: no config.json, so no saved model; {fix}") from None
    except ValueError as err:
        raise FormatError(f"{p / 'config.json'}: not JSON ({err}); {fix}") from None
    if not isinstance(cfg, dict):
        raise FormatError(f"{p / 'config.json'}: not a model config (a JSON object); {fix}")
    weights = [w for w in p.iterdir() if w.suffix in (".safetensors", ".bin")
               and not w.name.startswith("training_args")]
    if not weights:
        raise InputError(f"`{option}` {path}: no weights (model.safetensors); {fix}")
    for w in weights:
        with open(w, "rb") as f:
            if f.read(64).startswith(b"version https://git-lfs"):
                raise InputError(f"`{option}` {path}: {w.name} is a git-lfs pointer file, not "
                                 f"the weights; run `git lfs pull` in {path}")
    return cfg


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto ``path`` only if the block succeeds.
    The file's mode follows the umask, as ``open()``'s does."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        _as_open_would(tmp_path)
        yield tmp_path
        check_stop()  # a swallowed SIGTERM / Ctrl-C still commits nothing
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling folder; it replaces ``path`` only if the block succeeds.

    An existing ``path`` is moved aside first and removed once the new folder is in place,
    so a failure at any point leaves either the old folder or nothing, never a mix. The
    folder's mode follows the umask, as ``mkdir()``'s does.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(path), suffix=".tmp", dir=path.parent))
    try:
        _as_open_would(tmp, folder=True)
        yield tmp
        check_stop()  # a swallowed SIGTERM / Ctrl-C still commits nothing
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=_prefix(path), suffix=".old", dir=path.parent))
            os.replace(path, old / "x")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = None) -> None:
    """Write JSON atomically (``allow_nan=False``: NaN is not JSON). ``json.dumps`` rather than
    ``json.dump``: the same text, from the C encoder (``dump`` streams through the pure-Python
    one, several times slower on a scene's vertex lists)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(obj, indent=indent, allow_nan=False))


def cache_root() -> Path:
    """Where the library keeps what it can recompute (parsed references, model replies):
    ``$HF_REAL3D_CACHE``, else ``$HF_HOME/hf_real3d`` (``~/.cache/huggingface/hf_real3d``)."""
    if os.environ.get("HF_REAL3D_CACHE"):
        return Path(os.environ["HF_REAL3D_CACHE"])
    hf_home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                Path.home() / ".cache") / "huggingface"
    return Path(hf_home) / "hf_real3d"


def looks_local(name: str) -> bool:
    """A folder path (existing, or written like one) rather than an ``org/name`` Hub id."""
    return Path(name).exists() or name.startswith(("/", ".", "~")) or name.count("/") != 1


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file (a byte-order mark dropped); text in another encoding is a
    :class:`FormatError` naming the file, the line and the byte."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise FormatError(f"{path}: line {line} is not UTF-8 text (byte 0x{data[err.start]:02x}); "
                          "re-save the file as UTF-8") from None


def check_link(path: str | os.PathLike) -> None:
    """An :class:`InputError` when ``path`` is a symbolic link that leads to no file: one that
    loops (``Path.is_file`` would call it missing) or one that points nowhere."""
    path = Path(path)
    if not path.is_symlink():
        return
    try:
        os.stat(path)
    except OSError as err:
        target = os.readlink(path)
        if err.errno == errno.ELOOP:
            raise InputError(f"{path}: a symbolic link that loops (to {target}, which leads "
                             "back to it); point it at the file") from None
        raise InputError(f"{path}: a symbolic link to {target}, which does not exist; point "
                         "it at the file") from None


def read_json(path: str | os.PathLike) -> Any:
    """Read JSON, turning a parse error into a :class:`FormatError` naming file and line."""
    path = Path(path)
    if not path.is_file():
        check_link(path)
        raise FileNotFoundError(f"{path}: no such file")
    data = path.read_bytes()
    if data.startswith(UTF8_BOM):  # written by Windows editors and some exporters
        data = data[len(UTF8_BOM):]
    if orjson is not None:
        try:
            with no_gc():
                return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # json below accepts what orjson refuses (NaN, huge ints) or says where
    try:
        with no_gc():
            return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise FormatError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise FormatError(
            f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None


def read_jsonl(path: str | os.PathLike, *, objects: bool = True) -> list[tuple[int, Any]]:
    """The values of a JSONL file as ``(line number, value)``, blank lines skipped; a line
    that is not JSON (or, with ``objects``, not a JSON object) is a :class:`FormatError`
    naming the file, the line and the column."""
    path = Path(path)
    out = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise FormatError(f"{path}: line {n}, column {err.colno}: malformed JSON "
                              f"({err.msg})") from None
        if objects and not isinstance(value, dict):
            raise FormatError(f"{path}: line {n} is not a JSON object")
        out.append((n, value))
    return out


def plain_value(v: Any) -> Any:
    """``v`` as a plain Python value when it is a numpy scalar (what ``json`` can write)."""
    return v.item() if isinstance(v, np.generic) else v


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> None:
    """One JSON object per line, written atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
