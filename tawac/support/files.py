"""Reading a kernel's source and writing files so that readers never see a part of one
(no xDSL import)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tawac.support.diagnostics import CompileError


def decode(data: bytes, filename: str) -> str:
    """UTF-8 text, or an error at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CompileError(
            f"input is not UTF-8 (byte 0x{data[e.start]:02x})", location=f"{filename}:{line}:{col}"
        ) from None


def read_source(path: str | Path) -> str:
    """The UTF-8 text of the file at `path`; a `CompileError` when it cannot be read or
    is not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CompileError(f"cannot read {path}: {e.strerror}") from None
    return decode(data, str(path))


def write_atomic(
    path: Path, data: bytes | str, *, prefix: str | None = None, suffix: str = ""
) -> None:
    """Write `data` through a temporary file in the same folder (`prefix` + random +
    `suffix`; default prefix `.<name>.`) and `os.replace` it onto `path`: readers see the
    old file or the new one, and a failure leaves neither a partial file nor the
    temporary one. The file gets the permissions `open()` would give (umask), not
    mkstemp's 0600."""
    mode = "wb" if isinstance(data, bytes) else "w"
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(
        prefix=prefix if prefix is not None else f".{path.name}.", suffix=suffix, dir=folder
    )
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
