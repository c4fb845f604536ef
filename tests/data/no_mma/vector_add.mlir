// Triton's vector add (tutorial 01): z = x + y, 1024 elements per program, the tail past
// N dropped by the tensor's bound. Its tiles are all 1-d: the consumer reads x and y from
// global memory itself (8-byte vectors, predicated by the bound) and stores 16-byte vectors.
tile.kernel @vector_add(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>, %z: !tile.tensor<?xf32, ["N"]>) {
  %cb = arith.constant 1024 : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %cb : index
  %xt = tile.load %x[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %yt = tile.load %y[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %s = arith.addf %xt, %yt : tensor<1024xf32>
  tile.store %s, %z[%o] : tensor<1024xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
