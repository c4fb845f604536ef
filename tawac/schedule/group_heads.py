"""How many query heads one program takes (the `group-heads` pass applies it).

Grouped-query attention's G query heads of a group read the same K/V head: one program
for the group loads each K/V block once instead of G times, and a decode step's few
query rows per head fill the MMA's rows together (8 heads x 8 rows of a 64-row tile
instead of 1 row of 64).  The rule takes the whole group wherever the pass has proved the
grouping legal (`tawac.passes.group_heads.analyse`) and the group's heads split the tile's
rows evenly (BM / G rows each); otherwise one program per query head.
"""

from __future__ import annotations


def heads_per_program(group: int, rows: int) -> int:
    """Query heads per program for a kernel whose query heads share a K/V head in groups
    of `group` and whose query tiles have `rows` rows (the grouping legal)."""
    if group < 2 or rows % group:
        return 1
    return group


def why_not(group: int, rows: int) -> str | None:
    """Why `heads_per_program` keeps one head per program, or None where it groups."""
    if heads_per_program(group, rows) > 1:
        return None
    return f"a group of {group} heads does not divide the query tile's {rows} rows"
