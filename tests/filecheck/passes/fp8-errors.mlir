// fp8 tiles the code generator rejects, each with one located error: wgmma reads fp8
// operands K-major only (no transpose operands), K steps of 32, and fp8 tiles never live
// in registers.
// RUN: not tawac opt --split-input-file --emit ptx -p 'warp-specialize,plan{persistent=false},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' %s 2>&1 | filecheck %s

// B loaded as KxN (no transpose_rhs): MN-major.
tile.kernel @b_mn_major(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xf8E4M3FN>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.load %b[%k, %n0] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
// CHECK:      fp8-errors.mlir:[[# @LINE - 1]]:10: error: convert-to-ptx: the right operand (B) of this e4m3 x e4m3 tile.dot is MN-major (a KxN tile without transpose_rhs); fp8 wgmma needs K-major operands: transpose it in the source layout (store B as NxK) and use transpose_rhs
// CHECK-NEXT: {{^//}} -----
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// A loaded as KxM (transpose_lhs): MN-major.
tile.kernel @a_mn_major(%a: !tile.tensor<?x?xf8E5M2>, %b: !tile.tensor<?x?xf8E5M2>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[0] : !tile.tensor<?x?xf8E5M2>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%k, %m0] : !tile.tensor<?x?xf8E5M2> -> tensor<128x128xf8E5M2>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E5M2> -> tensor<128x128xf8E5M2>
    %d = tile.dot %x, %y, %acc_i transpose_lhs transpose_rhs : tensor<128x128xf8E5M2>, tensor<128x128xf8E5M2> -> tensor<128x128xf32>
// CHECK:      fp8-errors.mlir:[[# @LINE - 1]]:10: error: convert-to-ptx: the left operand (A) of this e5m2 x e5m2 tile.dot is MN-major (a KxM tile, transpose_lhs); fp8 wgmma needs K-major operands: transpose it in the source layout (store A as MxK) and drop transpose_lhs
// CHECK-NEXT: {{^//}} -----
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// K = 16 per step: not a whole k32 wgmma.
tile.kernel @k16(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xf8E4M3FN>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c16 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x16xf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x16xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x16xf8E4M3FN>, tensor<128x16xf8E4M3FN> -> tensor<128x128xf32>
// CHECK:      fp8-errors.mlir:[[# @LINE - 1]]:10: error: convert-to-ptx: K=16 of this MMA is not a multiple of 32, the K of one e4m3 wgmma
// CHECK-NEXT: {{^//}} -----
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// An fp8 result: the accumulator rounded to e4m3 would live in registers.
tile.kernel @fp8_out(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xf8E4M3FN>, %c: !tile.tensor<?x?xf8E4M3FN>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xf8E4M3FN>
// CHECK:      fp8-errors.mlir:[[# @LINE - 1]]:8: error: convert-to-ptx: arith.truncf makes a tensor<128x128xf8E4M3FN> tile in registers; fp8 tiles are supported only as tile.dot operands loaded from global memory (fp8 results, arithmetic and stores are not supported yet: compute in f32 and convert to bf16 or f16)
// CHECK-NEXT: {{^//}} -----
  tile.store %o, %c[%m0, %n0] : tensor<128x128xf8E4M3FN> -> !tile.tensor<?x?xf8E4M3FN>
  tile.return
}

// -----

// An fp8 vector in the epilogue (a per-column scale stored as fp8) would live in registers.
tile.kernel @fp8_vector(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xf8E4M3FN>, %s: !tile.tensor<?xf8E4M3FN>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %v = tile.load %s[%n0] : !tile.tensor<?xf8E4M3FN> -> tensor<128xf8E4M3FN>
// CHECK:      fp8-errors.mlir:[[# @LINE - 1]]:8: error: convert-to-ptx: tile.load makes a tensor<128xf8E4M3FN> tile in registers; fp8 tiles are supported only as tile.dot operands loaded from global memory (fp8 results, arithmetic and stores are not supported yet: compute in f32 and convert to bf16 or f16)
  %w = arith.extf %v : tensor<128xf8E4M3FN> to tensor<128xf32>
  %vb = tile.broadcast %w, 1 : tensor<128xf32> -> tensor<128x128xf32>
  %r = arith.mulf %acc, %vb : tensor<128x128xf32>
  tile.store %r, %c[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
