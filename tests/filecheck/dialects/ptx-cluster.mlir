// The PTX instructions of thread block clusters (issue 11), one op each: the special
// registers (PTX ISA 10), barrier.cluster (9.7.13.3), mapa (9.7.9.21), an arrival on a
// peer CTA's mbarrier (9.7.13.15.13) and the multicast TMA load (9.7.9.25). The generic form round-trips; --emit ptx
// prints each op's instruction.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s --emit ptx | filecheck %s --check-prefix=PTX

// CHECK:      %0 = "ptx.sreg"() <{sreg = "cluster_ctarank"}> : () -> !ptx.reg<b32>
// CHECK:      "ptx.barrier_cluster_arrive"() : () -> ()
// CHECK-NEXT: "ptx.barrier_cluster_wait"() : () -> ()
// CHECK:      %{{.*}} = "ptx.mapa"(%{{.*}}, %{{.*}}) : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b32>
// CHECK:      "ptx.mbarrier_arrive_cluster"(%{{.*}}, %{{.*}}) : (!ptx.reg<b32>, !ptx.reg<pred>) -> ()
// CHECK:      "ptx.cp_async_bulk_tensor_load_multicast"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!ptx.reg<b32>, !ptx.reg<b64>, !ptx.reg<b32>, !ptx.reg<b16>, !ptx.reg<b32>, !ptx.reg<b32>) -> ()

// PTX:      mov.u32 %r0, %cluster_ctarank;
// PTX-NEXT: mov.u32 %r1, %clusterid.x;
// PTX-NEXT: mov.u32 %r2, %nclusterid.x;
// PTX-NEXT: mov.u32 %r3, tawac_smem;
// PTX-NEXT: barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX-NEXT: mov.s32 %r4, 1;
// PTX-NEXT: xor.b32 %r5, %r0, %r4;
// PTX-NEXT: mapa.shared::cluster.u32 %r6, %r3, %r5;
// PTX-NEXT: setp.eq.s32 %p0, %r0, %r4;
// PTX-NEXT: @%p0 mbarrier.arrive.shared::cluster.b64 _, [%r6];
// PTX-NEXT: mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r3], %r4;
// PTX-NEXT: mov.b64 %rd0, t;
// PTX-NEXT: cvta.param.u64 %rd1, %rd0;
// PTX-NEXT: mov.b16 %h0, 3;
// PTX-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r3], [%rd1, {%r1, %r2}], [%r3], %h0;
// PTX-NEXT: exit;
"ptx.module"() <{version = "8.0", target = "sm_90a", smem_symbol = "tawac_smem"}> ({
  "ptx.entry"() <{sym_name = "k", params = [{name = "t", ptx = ".align 64 .b8 [128]", abi = {kind = "tensor_map"}}], maxntid = 128 : i64, minnctapersm = 1 : i64, launch = {}}> ({
    %0 = "ptx.sreg"() <{sreg = "cluster_ctarank"}> : () -> !ptx.reg<b32>
    %1 = "ptx.sreg"() <{sreg = "clusterid.x"}> : () -> !ptx.reg<b32>
    %2 = "ptx.sreg"() <{sreg = "nclusterid.x"}> : () -> !ptx.reg<b32>
    %3 = "ptx.shared_base"() <{symbol = "tawac_smem"}> : () -> !ptx.reg<b32>
    "ptx.barrier_cluster_arrive"() : () -> ()
    "ptx.barrier_cluster_wait"() : () -> ()
    %4 = "ptx.mov_imm"() <{type = "s32", value = 1 : i64}> : () -> !ptx.reg<b32>
    %5 = "ptx.xor"(%0, %4) <{type = "b32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b32>
    %6 = "ptx.mapa"(%3, %5) : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b32>
    %7 = "ptx.setp"(%0, %4) <{cmp = "eq", type = "s32"}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
    "ptx.mbarrier_arrive_cluster"(%6, %7) : (!ptx.reg<b32>, !ptx.reg<pred>) -> ()
    %8 = "ptx.mbarrier_try_wait"(%3, %4) : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<pred>
    %10 = "ptx.param_addr"() <{param = "t"}> : () -> !ptx.reg<b64>
    %11 = "ptx.cvta_param"(%10) : (!ptx.reg<b64>) -> !ptx.reg<b64>
    %12 = "ptx.mov_imm"() <{type = "b16", value = 3 : i64}> : () -> !ptx.reg<b16>
    "ptx.cp_async_bulk_tensor_load_multicast"(%3, %11, %3, %12, %1, %2) : (!ptx.reg<b32>, !ptx.reg<b64>, !ptx.reg<b32>, !ptx.reg<b16>, !ptx.reg<b32>, !ptx.reg<b32>) -> ()
    "ptx.exit"() : () -> ()
  }) : () -> ()
}) : () -> ()
