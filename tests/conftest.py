"""Session-wide test settings."""

from __future__ import annotations

import os
import tempfile

# The solver planner's answers are cached on disk: the tests (and the FileCheck suite
# they start) solve into a fresh folder of their own, so a stale cache cannot hide a
# change to the model and the tests do not write into the user's cache.
os.environ.setdefault("TAWAC_CACHE_DIR", tempfile.mkdtemp(prefix="tawac-cache-"))
