// pingpong: in a consumer loop with two MMAs per iteration (attention), warp group w
// waits for its turn before the first MMA and passes it right after; init/end pair the
// arrivals. The GEMM loop (one MMA) is left alone.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{stages=2 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false pingpong=true},pipeline,cooperative-consumers,lower-aref,pingpong' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{stages=3 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false pingpong=true},pipeline,cooperative-consumers,lower-aref,pingpong' | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/attention.mlir --emit ptx -p 'warp-specialize,plan{stages=2 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false pingpong=true},pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX

// CHECK:      hopper.turn "init"
// CHECK-NEXT: scf.for
// CHECK:        hopper.turn "wait"
// CHECK-NEXT:   %s = hopper.wgmma
// CHECK-NEXT:   hopper.turn "pass"
// CHECK:        hopper.wgmma %p16
// CHECK:      hopper.turn "end"

// GEMM-NOT: hopper.turn

// PTX: bar.arrive {{%r[0-9]+}}, 256;
// PTX: bar.sync {{%r[0-9]+}}, 256;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group
// PTX: bar.arrive {{%r[0-9]+}}, 256;
// PTX-NEXT: wgmma.wait_group.sync.aligned 0;
// PTX: bar.sync {{%r[0-9]+}}, 256;
