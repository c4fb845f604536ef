"""Writing files so that readers never see a part of one (no xDSL import)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
