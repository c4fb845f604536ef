"""Stream-K's programs as the interpreter runs them: which tile and which share of it
each program of a stream-K kernel computes, on a given number of CTAs (what the
`persistent` pass makes of `tile.split_info`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamPrograms:
    """Stream-K's programs over a grid of tiles (`stream_programs`): per program, its
    tile's program ids (x, y, z) and its share (n, z, base) of `tile.split_info`."""

    n: int
    pids: tuple[list[int], list[int], list[int]]
    share: tuple[list[int], list[int], list[int]]


def default_stream_ctas(tiles: int, max_splits: int) -> int:
    """The CTAs a stream-K run simulates where no multiprocessor count is given: one fewer
    than the tiles from 3 tiles on (the whole waves' tiles are one program each, the last
    tile is split min(max_splits, tiles - 1) ways), else `max_splits` per tile (every
    tile split `max_splits` ways): both kinds of program run."""
    return tiles - 1 if tiles >= 3 else max(1, tiles * max_splits)


def stream_programs(grid: tuple[int, int, int], ctas: int, max_splits: int) -> StreamPrograms:
    """What `persistent` makes of stream-K's tiles (`tawac.passes.persistent`,
    `_stream_plan` and `_stream_share`) on `ctas` CTAs: the tiles of the whole waves
    (dp = T - T mod ctas) are one program each; the `rest` tiles of the last wave are
    split `splits` = max(1, min(max_splits, ctas / rest)) ways, program dp + j being split
    j mod splits of tile dp + j / splits, its partials at slots j - z .. j - z + splits - 1.
    Tile t is program ids (t mod gx, t / gx mod gy, t / (gx gy)) (the tile order does not
    change what is computed)."""
    gx, gy, gz = grid
    tiles = gx * gy * gz
    dp = tiles // ctas * ctas
    rest = tiles - dp
    splits = max(1, min(max_splits, ctas // max(rest, 1)))
    n = dp + rest * splits
    pids: tuple[list[int], list[int], list[int]] = ([], [], [])
    share: tuple[list[int], list[int], list[int]] = ([], [], [])
    for t in range(n):
        tail = t >= dp
        j = t - dp if tail else 0
        z = j % splits
        number = dp + j // splits if tail else t
        for lst, v in zip(pids, (number % gx, number // gx % gy, number // (gx * gy)), strict=True):
            lst.append(v)
        for lst, v in zip(share, (splits if tail else 1, z, j - z), strict=True):
            lst.append(v)
    return StreamPrograms(n, pids, share)
