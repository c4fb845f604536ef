// A 1-d kernel with two outputs: s = x + y in f32 and p = x * y rounded to bf16, 1024
// elements per program, the tail past N dropped by each tensor's bound. The f32 loads set
// the runs (4 elements a thread); the bf16 store writes them as packed pairs.
tile.kernel @sum_product(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>, %s: !tile.tensor<?xf32, ["N"]>, %p: !tile.tensor<?xbf16, ["N"]>) {
  %cb = arith.constant 1024 : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %cb : index
  %xt = tile.load %x[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %yt = tile.load %y[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %st = arith.addf %xt, %yt : tensor<1024xf32>
  %pt = arith.mulf %xt, %yt : tensor<1024xf32>
  %p16 = arith.truncf %pt : tensor<1024xf32> to tensor<1024xbf16>
  tile.store %st, %s[%o] : tensor<1024xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.store %p16, %p[%o] : tensor<1024xbf16> -> !tile.tensor<?xbf16, ["N"]>
  tile.return
}
