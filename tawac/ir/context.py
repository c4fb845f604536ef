"""The MLIR context with every dialect tawac reads or writes."""

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf


def make_context() -> Context:
    from tawac.dialects.aref import Aref
    from tawac.dialects.hopper import Hopper
    from tawac.dialects.ptx import Ptx
    from tawac.dialects.schedule import TawacDialect
    from tawac.dialects.tile import Tile

    ctx = Context()
    for d in (Builtin, Arith, Math, Scf, Tile, Aref, Hopper, Ptx, TawacDialect):
        ctx.load_dialect(d)
    return ctx
