// fp8 GEMM: C = (A * B^T) * scale_a * scale_b. A is MxK and B is NxK, both f8E4M3FN and
// K-major (fp8 wgmma reads K-major operands only), fp32 accumulation, C is MxN bf16;
// scale_a and scale_b are per-tensor dequantisation scales (f32 scalars), applied once to
// the accumulator in the epilogue. Parameters: BLOCK_M x BLOCK_N tiles, BLOCK_K-deep steps
// (128 fp8 elements: one 128-byte swizzle row, four k32 wgmmas).
tile.kernel @gemm_fp8(%a: !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>, %b: !tile.tensor<?x?xf8E4M3FN, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %scale_a: f32, %scale_b: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 128}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN, ["N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>, tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %scale = arith.mulf %scale_a, %scale_b : f32
  %s = tile.splat %scale : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %r = arith.mulf %acc, %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %r : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
