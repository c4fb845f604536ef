// Test data: examples/attention.mlir with fp16 Q, K, V, O and an fp16 P (f32 statistics
// and accumulators as before).
tile.kernel @attention_fp16(%q: !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>, %v: !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>, %o: !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>, %scale_log2e: f32) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %m0 = arith.muli %pid_m, %c128 : index
  %S = tile.dim %k[2] : !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]> -> tensor<128x128xf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<128xf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<128xf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<128x128xf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<128xf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<128x128xf32>
  %limit = tile.splat %S : index -> tensor<128x128xi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %S step %c128 iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>) {
    %kt = tile.load %k[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]> -> tensor<128x128xf16>
    %vt = tile.load %v[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]> -> tensor<128x128xf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<128x128xf16>, tensor<128x128xf16> -> tensor<128x128xf32>
    %n_end = arith.addi %n, %c128 : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %s2 = scf.if %ragged -> (tensor<128x128xf32>) {
      %cols = tile.iota 1, %n : tensor<128x128xi32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<128x128xi32>
      %masked = tile.select %inside, %s, %neg : tensor<128x128xi1>, tensor<128x128xf32>
      scf.yield %masked : tensor<128x128xf32>
    } else {
      scf.yield %s : tensor<128x128xf32>
    }
    %raw_max = tile.reduce max %s2, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %row_max = arith.mulf %raw_max, %scale_v : tensor<128xf32>
    %m_new = arith.maximumf %m_j, %row_max : tensor<128xf32>
    %m_b = tile.broadcast %m_new, 0 : tensor<128xf32> -> tensor<128x128xf32>
    %s_scaled = arith.mulf %s2, %scale : tensor<128x128xf32>
    %shifted = arith.subf %s_scaled, %m_b : tensor<128x128xf32>
    %p = math.exp2 %shifted : tensor<128x128xf32>
    %row_sum = tile.reduce sum %p, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %dm = arith.subf %m_j, %m_new : tensor<128xf32>
    %alpha = math.exp2 %dm : tensor<128xf32>
    %l_scaled = arith.mulf %l_j, %alpha : tensor<128xf32>
    %l_new = arith.addf %l_scaled, %row_sum : tensor<128xf32>
    %alpha_b = tile.broadcast %alpha, 0 : tensor<128xf32> -> tensor<128x128xf32>
    %acc_scaled = arith.mulf %acc_j, %alpha_b : tensor<128x128xf32>
    %p16 = arith.truncf %p : tensor<128x128xf32> to tensor<128x128xf16>
    %acc_new = tile.dot %p16, %vt, %acc_scaled : tensor<128x128xf16>, tensor<128x128xf16> -> tensor<128x128xf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>
  }
  %l_b = tile.broadcast %l_i, 0 : tensor<128xf32> -> tensor<128x128xf32>
  %out = arith.divf %acc, %l_b fastmath<arcp> : tensor<128x128xf32>
  %out16 = arith.truncf %out : tensor<128x128xf32> to tensor<128x128xf16>
  tile.store %out16, %o[%b, %h, %m0, %c0] : tensor<128x128xf16> -> !tile.tensor<?x?x?x?xf16, ["B", "H", "S", "D"]>
  tile.return
}
