// Verifier errors of the ptx dialect.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    "ptx.setmaxnreg"() <{action = "inc", regs = 100 : i64}> : () -> ()
// CHECK:      {{.*}}ptx-invalid.mlir:[[# @LINE - 1]]:5: error: ptx.setmaxnreg: bad action or count 100
// CHECK-NEXT: {{^//}} -----
  }) : () -> ()
}) : () -> ()

// -----

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.mov_imm"() <{type = "b64", value = 0 : i64}> : () -> !ptx.reg<b64>
    %1 = "ptx.mov_imm"() <{type = "pred", value = 1 : i64}> : () -> !ptx.reg<pred>
    %2 = "ptx.mov_imm"() <{type = "f32", value = 0.0 : f32}> : () -> !ptx.reg<f32>
    "ptx.wgmma_mma_async"(%0, %0, %1, %2, %2, %2) <{n = 8 : i64, k = 16 : i64, ab_type = "bf16", trans_a = 0 : i64, trans_b = 0 : i64}> : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>, !ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<f32>) -> ()
// CHECK:      {{.*}}ptx-invalid.mlir:[[# @LINE - 1]]:5: error: ptx.wgmma_mma_async: m64n8 takes 4 accumulator registers, got 3
// CHECK-NEXT: {{^//}} -----
  }) : () -> ()
}) : () -> ()

// -----

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.mov_imm"() <{type = "b64", value = 0 : i64}> : () -> !ptx.reg<b64>
    %1 = "ptx.mov_imm"() <{type = "pred", value = 1 : i64}> : () -> !ptx.reg<pred>
    "ptx.wgmma_mma_async"(%0, %0, %1) <{n = 12 : i64, k = 16 : i64, ab_type = "bf16", trans_a = 0 : i64, trans_b = 0 : i64}> : (!ptx.reg<b64>, !ptx.reg<b64>, !ptx.reg<pred>) -> ()
// CHECK:      {{.*}}ptx-invalid.mlir:[[# @LINE - 1]]:5: error: ptx.wgmma_mma_async: N=12 must be a multiple of 8 in 8..256
// CHECK-NEXT: {{^//}} -----
  }) : () -> ()
}) : () -> ()

// -----

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = arith.constant 0 : index
  }) : () -> ()
// CHECK:      {{.*}}ptx-invalid.mlir:[[# @LINE - 3]]:3: error: ptx.entry: arith.constant is not a PTX instruction
// CHECK-NEXT: {{^//}} -----
}) : () -> ()

// -----

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.mov_imm"() <{type = "b8", value = 0 : i64}> : () -> !ptx.reg<b8>
  }) : () -> ()
}) : () -> ()
// Type verifier: the location is checked in tests/filecheck/bugs/type-error-location.mlir.
// CHECK: {{.*}}ptx-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: unknown PTX register class b8

// -----

"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.mov_imm"() <{type = "f32", value = 2.0 : f32}> : () -> !ptx.reg<f32>
    %1 = "ptx.rcp"(%0) <{mode = "rz"}> : (!ptx.reg<f32>) -> !ptx.reg<f32>
// CHECK:      {{.*}}ptx-invalid.mlir:[[# @LINE - 1]]:10: error: ptx.rcp: mode must be rn or approx.ftz, got rz
  }) : () -> ()
}) : () -> ()
