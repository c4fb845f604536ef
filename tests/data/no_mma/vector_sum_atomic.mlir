// A sum of S vectors with atomics: y[n] += sum over s of x[s, n]. Program (x, y) adds its
// 1024 elements of row y of x (elements 1024 px..) to y with tile.atomic_add. Its tiles
// are all 1-d: a BlockedLayout of runs of 4, each run one 16-byte red.global.add.v4.f32
// under its first element's bound. The elements past N are dropped.
tile.kernel @vector_sum_atomic(%x: !tile.tensor<?x?xf32, ["S", "N"]>, %y: !tile.tensor<?xf32, ["N"]>) {
  %cb = arith.constant 1024 : index
  %pid = tile.program_id x
  %s = tile.program_id y
  %o = arith.muli %pid, %cb : index
  %xt = tile.load %x[%s, %o] : !tile.tensor<?x?xf32, ["S", "N"]> -> tensor<1024xf32>
  tile.atomic_add %xt, %y[%o] : tensor<1024xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
