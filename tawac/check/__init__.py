"""The compiler checking itself: translation validation of the tile-level passes against
the reference interpreter (`validate`), and equivalent spellings of tile programs to run
through them (`variants`)."""

from tawac.check.validate import (
    Baseline,
    NotComparable,
    Validation,
    ValidationError,
    Validator,
    baseline,
    make_inputs,
    run,
    tile_pipeline,
    validate,
    validate_pipeline,
)

__all__ = [
    "Baseline",
    "NotComparable",
    "Validation",
    "ValidationError",
    "Validator",
    "baseline",
    "make_inputs",
    "run",
    "tile_pipeline",
    "validate",
    "validate_pipeline",
]
