// Column sums with atomics: y[n] += sum over rows of x[m, n]. Program (x, y) loads its
// 64x128 block of x (rows 64 px.., columns 128 py..), reduces it along the rows (the
// column slice of the block's layout) and adds the 128 sums to y with tile.atomic_add:
// the programs of one column block all add into the same 128 elements. The rows and
// columns past M and N read as 0; the adds past N are dropped.
tile.kernel @column_sum_atomic(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %y: !tile.tensor<?xf32, ["N"]>) {
  %bm = arith.constant 64 : index
  %bn = arith.constant 128 : index
  %pm = tile.program_id x
  %pn = tile.program_id y
  %m0 = arith.muli %pm, %bm : index
  %n0 = arith.muli %pn, %bn : index
  %xt = tile.load %x[%m0, %n0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64x128xf32>
  %cs = tile.reduce sum %xt, 0 : tensor<64x128xf32> -> tensor<128xf32>
  tile.atomic_add %cs, %y[%n0] : tensor<128xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
