// A sum of S slices with atomics: y[m, n] += sum over s of x[s, m, n] * 2. Program
// (x, y, z) scales its 64x128 block of slice z (rows 64 px.., columns 128 py..) and adds
// it to y's block with tile.atomic_add from the block's registers (the accumulator
// layout): the S programs of one block all add into it. The elements past M and N are
// dropped.
tile.kernel @split_add_atomic(%x: !tile.tensor<?x?x?xf32, ["S", "M", "N"]>, %y: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %bm = arith.constant 64 : index
  %bn = arith.constant 128 : index
  %pm = tile.program_id x
  %pn = tile.program_id y
  %s = tile.program_id z
  %m0 = arith.muli %pm, %bm : index
  %n0 = arith.muli %pn, %bn : index
  %xt = tile.load %x[%s, %m0, %n0] : !tile.tensor<?x?x?xf32, ["S", "M", "N"]> -> tensor<64x128xf32>
  %two = arith.constant dense<2.000000e+00> : tensor<64x128xf32>
  %v = arith.mulf %xt, %two : tensor<64x128xf32>
  tile.atomic_add %v, %y[%m0, %n0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
