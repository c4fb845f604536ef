"""Target models: the hardware facts the passes read (`HOPPER`, sm_90a)."""

from tawac.target.hopper import HOPPER, MmaAtom, NamedBarriers, Target, overridden

__all__ = ["HOPPER", "MmaAtom", "NamedBarriers", "Target", "overridden"]
