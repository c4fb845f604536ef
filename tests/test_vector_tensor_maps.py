"""Tensor maps of streamed 1-d tiles (`LinearTile`): a box of up to 256 elements along the
last dimension, one element of each leading one, no swizzle; what the runtime encodes
for a rank-1 and a rank-2 tensor (no GPU)."""

from __future__ import annotations

import pytest

from tawac.runtime.arguments import TensorView
from tawac.runtime.tensor_maps import needs_padding, tensor_map_dims
from tawac.target.layouts import LinearTile


def test_a_rank_1_map_has_no_strides_and_one_box_dimension():
    view = TensorView(shape=(2500,), strides=(1,), data_ptr=1 << 20, elem_size=4)
    param = {"kind": "tensor_map", "arg": "x", "box": [256], "swizzle": "none"}
    assert tensor_map_dims(param, view) == ([2500], [], [256], [1])
    assert not needs_padding(view)


def test_a_row_of_a_rank_2_tensor_is_a_box_of_one_row():
    view = TensorView(shape=(37, 1000), strides=(1008, 1), data_ptr=1 << 20, elem_size=2)
    param = {"kind": "tensor_map", "arg": "x", "box": [256, 1], "swizzle": "none"}
    assert tensor_map_dims(param, view) == ([1000, 37], [2016], [256, 1], [1, 1])


@pytest.mark.parametrize(
    ("n", "elem", "boxes", "box", "nbytes"),
    [(1024, 4, 4, 256, 4096), (1024, 2, 4, 256, 2048), (64, 4, 1, 64, 256), (100, 4, 1, 100, 512)],
)
def test_linear_tiles_are_whole_boxes_in_order(n, elem, boxes, box, nbytes):
    """Element c at byte c * elem; box b at byte b * box * elem (each 128-byte aligned);
    a slot is whole 128-byte pieces, and a copy delivers exactly the tile's bytes."""
    tile = LinearTile(n, elem)
    assert (tile.num_chunks, tile.box, tile.nbytes, tile.tma_bytes) == (
        boxes,
        box,
        nbytes,
        n * elem,
    )
    assert tile.chunks() == [(b * box * elem, b * box) for b in range(boxes)]
    assert all(off % 128 == 0 for off, _ in tile.chunks())
    assert [tile.byte_offset(c) for c in range(n)] == [c * elem for c in range(n)]


@pytest.mark.parametrize(("n", "elem"), [(300, 4), (2, 4), (6, 2), (0, 4)])
def test_tiles_tma_cannot_copy_in_whole_boxes_are_refused(n, elem):
    assert LinearTile.problem(n, elem) is not None
    with pytest.raises(ValueError):
        LinearTile(n, elem)
