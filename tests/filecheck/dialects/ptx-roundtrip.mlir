// ptx ops have no custom syntax: the generic form round-trips, and --emit ptx prints
// each op's PTX instruction.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s --emit ptx | filecheck %s --check-prefix=PTX

// CHECK:      "ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
// CHECK-NEXT:   "ptx.entry"() <{sym_name = "k", params = [{name = "n", ptx = ".s32", abi = {kind = "dim"}}, {name = "t", ptx = ".align 64 .b8 [128]", abi = {kind = "tensor_map"}}], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
// CHECK-NEXT:     %0 = "ptx.sreg"() <{sreg = "tid.x"}> : () -> !ptx.reg<b32>
// CHECK-NEXT:     %1 = "ptx.mov_imm"() <{type = "s32", value = 7 : i64}> : () -> !ptx.reg<b32>
// CHECK-NEXT:     %2 = "ptx.add"(%0, %1) <{type = "s32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b32>
// CHECK-NEXT:     %3 = "ptx.mul"(%0, %1) <{type = "s32", mode = "wide"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b64>
// CHECK-NEXT:     %4 = "ptx.setp"(%2, %1) <{cmp = "lt", type = "s32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
// CHECK-NEXT:     "ptx.bra"(%4) <{target = "$L_end", negate = 1 : i64}> : (!ptx.reg<pred>) -> ()
// CHECK-NEXT:     %5 = "ptx.ld_param"() <{type = "s32", param = "n"}> : () -> !ptx.reg<b32>
// CHECK-NEXT:     "ptx.mbarrier_init"(%2) <{count = 8 : i64}> : (!ptx.reg<b32>) -> ()
// CHECK-NEXT:     %6 = "ptx.mbarrier_try_wait"(%2, %5) : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
// CHECK-NEXT:     "ptx.wgmma_fence"() : () -> ()
// CHECK-NEXT:     "ptx.wgmma_commit"() : () -> ()
// CHECK-NEXT:     "ptx.wgmma_wait"() <{pending = 1 : i64}> : () -> ()
// CHECK-NEXT:     "ptx.setmaxnreg"() <{action = "inc", regs = 232 : i64}> : () -> ()
// CHECK-NEXT:     "ptx.label"() <{label = "$L_end"}> : () -> ()
// CHECK-NEXT:     "ptx.exit"() : () -> ()
// CHECK-NEXT:   }) : () -> ()
// CHECK-NEXT: }) : () -> ()

// PTX:      .version 8.0
// PTX-NEXT: .target sm_90a
// PTX-NEXT: .address_size 64
// PTX:      .extern .shared .align 1024 .b8 tawac_smem[];
// PTX:      .visible .entry k(
// PTX-NEXT:   .param .s32 n,
// PTX-NEXT:   .param .align 64 .b8 t[128]
// PTX-NEXT: )
// PTX-NEXT: .maxntid 128, 1, 1
// PTX-NEXT: .minnctapersm 1
// PTX-NEXT: {
// PTX-NEXT:   .reg .pred %p<2>;
// PTX-NEXT:   .reg .b32 %r<4>;
// PTX-NEXT:   .reg .b64 %rd<1>;
// PTX-EMPTY:
// PTX-NEXT:   mov.u32 %r0, %tid.x;
// PTX-NEXT:   mov.s32 %r1, 7;
// PTX-NEXT:   add.s32 %r2, %r0, %r1;
// PTX-NEXT:   mul.wide.s32 %rd0, %r0, %r1;
// PTX-NEXT:   setp.lt.s32 %p0, %r2, %r1;
// PTX-NEXT:   @!%p0 bra $L_end;
// PTX-NEXT:   ld.param.s32 %r3, [n];
// PTX-NEXT:   mbarrier.init.shared::cta.b64 [%r2], 8;
// PTX-NEXT:   mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r3;
// PTX-NEXT:   wgmma.fence.sync.aligned;
// PTX-NEXT:   wgmma.commit_group.sync.aligned;
// PTX-NEXT:   wgmma.wait_group.sync.aligned 1;
// PTX-NEXT:   setmaxnreg.inc.sync.aligned.u32 232;
// PTX-NEXT: $L_end:
// PTX-NEXT:   exit;
// PTX-NEXT: }
"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [{name = "n", ptx = ".s32", abi = {kind = "dim"}}, {name = "t", ptx = ".align 64 .b8 [128]", abi = {kind = "tensor_map"}}], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.sreg"() <{sreg = "tid.x"}> : () -> !ptx.reg<b32>
    %1 = "ptx.mov_imm"() <{type = "s32", value = 7 : i64}> : () -> !ptx.reg<b32>
    %2 = "ptx.add"(%0, %1) <{type = "s32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b32>
    %3 = "ptx.mul"(%0, %1) <{type = "s32", mode = "wide"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b64>
    %4 = "ptx.setp"(%2, %1) <{cmp = "lt", type = "s32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
    "ptx.bra"(%4) <{target = "$L_end", negate = 1 : i64}> : (!ptx.reg<pred>) -> ()
    %5 = "ptx.ld_param"() <{type = "s32", param = "n"}> : () -> !ptx.reg<b32>
    "ptx.mbarrier_init"(%2) <{count = 8 : i64}> : (!ptx.reg<b32>) -> ()
    %6 = "ptx.mbarrier_try_wait"(%2, %5) : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
    "ptx.wgmma_fence"() : () -> ()
    "ptx.wgmma_commit"() : () -> ()
    "ptx.wgmma_wait"() <{pending = 1 : i64}> : () -> ()
    "ptx.setmaxnreg"() <{action = "inc", regs = 232 : i64}> : () -> ()
    "ptx.label"() <{label = "$L_end"}> : () -> ()
    "ptx.exit"() : () -> ()
  }) : () -> ()
}) : () -> ()
