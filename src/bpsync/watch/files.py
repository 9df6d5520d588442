"""File-system edges of the watcher: stat, open check, copy-and-hash, moves that never replace,
atomic writes and the folder scan. Everything here is blocking; the import loop calls it through
`asyncio.to_thread`."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bpsync.watch.rules import Snapshot, is_ignored

CHUNK = 1 << 20


def snapshot(path: Path) -> Snapshot | None:
    """Size and mtime of a regular file; None when it is gone or not a regular file."""
    try:
        st = path.stat(follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return Snapshot(st.st_size, st.st_mtime_ns)


def can_open(path: Path) -> bool:
    """Whether the file can be opened and read now (Windows refuses files another program holds
    open for writing; a share may refuse a file still being uploaded)."""
    try:
        with path.open("rb") as f:
            f.read(1)
    except OSError:
        return False
    return True


def copy_and_hash(src: Path, dst: Path) -> str:
    """Copy `src` to `dst` (created 0600) and return the SHA-256 of exactly the bytes copied."""
    h = hashlib.sha256()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with src.open("rb") as fin, os.fdopen(fd, "wb") as fout:
        while chunk := fin.read(CHUNK):
            h.update(chunk)
            fout.write(chunk)
        fout.flush()
        os.fsync(fout.fileno())
    return h.hexdigest()


def move_file(src: Path, dst: Path) -> None:
    """Move `src` to `dst` (which must not exist), across file systems if need be. A copy is
    complete and renamed into place before the source is removed, so a crash leaves the file in
    one place or both, never in none."""
    if dst.exists():
        raise FileExistsError(errno.EEXIST, "destination exists", str(dst))
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    tmp = dst.with_name(f".{dst.name}.bpsync-part")
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)
    src.unlink()


def write_atomic(path: Path, text: str) -> None:
    """Write a file we own (receipt, explanation) via a temporary file and a rename, readable by
    this user only: explanations and receipts quote what the file held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    # A file name that is not UTF-8 on disk (surrogate escapes) is written as `\udcff`: readable
    # text, and in a JSON string the escape that reads back as the same name.
    with open(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def scan(folder: Path, ignore: Iterable[str]) -> list[Path]:
    """The regular files directly in `folder` that are not ignored, oldest mtime first (the order
    they most likely arrived in while nobody was watching)."""
    patterns = tuple(ignore)
    found: list[tuple[int, str, Path]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if is_ignored(entry.name, patterns):
                continue
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    found.append(
                        (
                            entry.stat(follow_symlinks=False).st_mtime_ns,
                            entry.name,
                            Path(entry.path),
                        )
                    )
    return [p for _, _, p in sorted(found)]


def symlinks(folder: Path, ignore: Iterable[str]) -> list[Path]:
    """The symbolic links directly in `folder` (never followed: a link could bring in a file from
    anywhere the watcher's user can read)."""
    patterns = tuple(ignore)
    with os.scandir(folder) as entries:
        return sorted(
            Path(e.path) for e in entries if e.is_symlink() and not is_ignored(e.name, patterns)
        )


def remove_tree(path: Path) -> None:
    """Remove a private working folder of ours (never a user's file)."""
    shutil.rmtree(path, ignore_errors=True)
