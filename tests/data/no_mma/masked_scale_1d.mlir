// A 1-d tile masked by its index vector: y = where(o + i < n, x * s, 0) for the 1024
// elements of a program, n a scalar argument (a length shorter than the tensor's N, which
// bounds the loads and stores). The mask's `tile.iota 0, %o` takes the BlockedLayout of
// the values it selects: register i of a thread holds o + thread_start + reg_offset(i).
tile.kernel @masked_scale_1d(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>, %s: f32, %n: index) {
  %cb = arith.constant 1024 : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %cb : index
  %xt = tile.load %x[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %st = tile.splat %s : f32 -> tensor<1024xf32>
  %scaled = arith.mulf %xt, %st : tensor<1024xf32>
  %cols = tile.iota 0, %o : tensor<1024xi32>
  %len = tile.splat %n : index -> tensor<1024xi32>
  %in = tile.cmpi slt, %cols, %len : tensor<1024xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %zt = tile.splat %zero : f32 -> tensor<1024xf32>
  %yt = tile.select %in, %scaled, %zt : tensor<1024xi1>, tensor<1024xf32>
  tile.store %yt, %y[%o] : tensor<1024xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
