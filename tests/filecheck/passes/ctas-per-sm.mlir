// ctas-per-sm: the plan fits k CTAs on one SM. The rings are sized to the CTA's share of
// shared memory (233472 / 4 - 1024 = 57344 bytes: 6 slots of 8 KiB, not the 8 a row
// kernel aims for), the register budgets to its share of the register file (entering at
// 64 a thread, the producer gives 40 back to the consumer: 104), the PTX asks ptxas for
// 4 CTAs a SM, and a persistent launch runs 4 per SM. Rings that do not fit the share
// are a located error, and so is an MMA whose fragment the kernel's register target
// cannot hold (ptxas's C7602): the 128x256 GEMM at 2 CTAs a SM enters at 128 registers a
// thread, and one m64n256 wgmma needs 154.
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic ctas-per-sm=4}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=ONE
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic ctas-per-sm=4},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX
// RUN: not tawac opt %s -p 'warp-specialize,plan{schedule=heuristic ctas-per-sm=4 stages=8},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not tawac compile %S/../../../examples/gemm.mlir --ctas-per-sm 2 -o %t.ptx 2>&1 | filecheck %s --check-prefix=MMA

// PLAN: roles = [producer wg 1 regs 24, consumer wg 1 regs 104], arefs = [x: depth 6 resident l2], ctas_per_sm = 4, tiles = grouped 8

// ONE: maxntid = 256 : i64, minnctapersm = 1 : i64, launch = {{.*}}grid = [{persistent = 1 : i64}
// ONE: ptx.setmaxnreg"() <{action = "inc", regs = 256 : i64}>

// PTX: maxntid = 256 : i64, minnctapersm = 4 : i64, launch = {{.*}}grid = [{persistent = 4 : i64}
// PTX: ptx.setmaxnreg"() <{action = "dec", regs = 24 : i64}>
// PTX: ptx.setmaxnreg"() <{action = "inc", regs = 104 : i64}>

// MMA: gemm.mlir:3:1: error: plan: an MMA with 256 columns needs 154 registers per thread in one instruction; 2 warp groups at 2 CTAs a SM enter with 128; use fewer CTAs a SM or warp groups

// ERR: ctas-per-sm.mlir:[[# @LINE + 1]]:1: error: lower-aref: the aref rings need {{[0-9]+}} bytes of shared memory, more than the 57344 bytes a CTA can have at 4 CTAs a SM; use fewer stages or smaller tiles
tile.kernel @rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %bm = arith.constant 16 : index
  %bn = arith.constant 256 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<16xf32>
  %ss = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<16xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>
    %xf = arith.extf %xt : tensor<16x256xbf16> to tensor<16x256xf32>
    %s = tile.reduce sum %xf, 1 : tensor<16x256xf32> -> tensor<16xf32>
    %a = arith.addf %acc, %s : tensor<16xf32>
    scf.yield %a : tensor<16xf32>
  }
  %sb = tile.broadcast %ss, 0 : tensor<16xf32> -> tensor<16x256xf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>
    %xf = arith.extf %xt : tensor<16x256xbf16> to tensor<16x256xf32>
    %o = arith.divf %xf, %sb : tensor<16x256xf32>
    %o16 = arith.truncf %o : tensor<16x256xf32> to tensor<16x256xbf16>
    tile.store %o16, %y[%m0, %n] : tensor<16x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
