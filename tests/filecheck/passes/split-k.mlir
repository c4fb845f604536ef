// split-k: S programs per output tile along program id z, each adding the products of a
// chunk of the K steps; the last to arrive at the tile's ticket adds the S partials in
// split order and runs the epilogue.
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'split-k{splits=4}' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm_bias.mlir -p 'split-k{splits=3}' | filecheck %s --check-prefix=BIAS
// RUN: tawac opt %S/../../../examples/gemm.mlir --emit ptx -D BLOCK_M=64 -D BLOCK_N=64 -D BLOCK_K=128 -p 'split-k{splits=2},warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX
// RUN: not tawac opt %s -p 'split-k{splits=2}' --split-input-file 2>&1 | filecheck %s --check-prefix=ERR
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'split-k{stream=4}' | filecheck %s --check-prefix=STREAM
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'split-k{stream=4},warp-specialize,plan,pipeline,persistent' | filecheck %s --check-prefix=TAIL

// The workspace is two kernel arguments the launcher allocates (the sidecar's "workspace").
// CHECK:      tile.kernel @gemm({{.*}}, %tawac_splitk_partials: !tile.tensor<?x?x?xf32, ["tawac_splits", "M", "N"]>, %tawac_splitk_tickets: !tile.tensor<?x?xi32>)
// CHECK-SAME: tawac.workspace = {tawac_splitk_partials = {dtype = "f32", zero = 0 : i64, shape = [{const = 4 : i64}, {cdiv = {arg = "c", dim = 0 : i64}, by = 1 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 1 : i64}]}, tawac_splitk_tickets = {dtype = "i32", zero = 1 : i64, shape = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 256 : i64}]}}
// CHECK-SAME: tawac.decomposition = {kind = "split_k", splits = 4 : i64}
// The z-th chunk of whole steps.
// CHECK:      %splits = arith.constant 4 : index
// CHECK:      %split = tile.program_id z
// CHECK:      %[[STEPS:.*]] = arith.ceildivsi %{{.*}}, %bk : index
// CHECK:      %[[PER:.*]] = arith.ceildivsi %[[STEPS]], %splits : index
// CHECK:      %[[CHUNK:.*]] = arith.muli %[[PER]], %bk : index
// CHECK:      %[[OFF:.*]] = arith.muli %split, %[[CHUNK]] : index
// CHECK:      %k_lo = arith.addi %c0, %[[OFF]] : index
// CHECK:      %[[END:.*]] = arith.addi %k_lo, %[[CHUNK]] : index
// CHECK:      %k_hi = arith.minsi %[[END]], %K : index
// CHECK:      %acc = scf.for %k = %k_lo to %k_hi step %bk
// CHECK:      tile.store %acc, %tawac_splitk_partials[%split, %m0, %n0]
// CHECK:      %last = tile.arrive %tawac_splitk_tickets[%{{.*}}, %{{.*}}] count %splits : !tile.tensor<?x?xi32>
// CHECK:      scf.if %last {
// CHECK-NEXT:   %sum = tile.split_sum %tawac_splitk_partials[%{{.*}}, %m0, %n0] count %splits max 4
// CHECK-NEXT:   %o = arith.truncf %sum
// CHECK-NEXT:   tile.store %o, %c[%m0, %n0]
// CHECK-NEXT: }
// CHECK-NEXT: tile.return

// The partial is stored and the ticket taken right after the loop. The bias load, the
// splat of alpha and the broadcast are read only by the epilogue: they move under the if
// (the programs that are not last skip them).
// BIAS:      %acc = scf.for
// BIAS:      tile.store %acc, %tawac_splitk_partials
// BIAS:      %last = tile.arrive {{.*}} count %splits
// BIAS-NEXT: scf.if %last {
// BIAS-NEXT:   %sum = tile.split_sum {{.*}} count %splits max 3
// BIAS-NEXT:   %s = tile.splat %alpha
// BIAS-NEXT:   %scaled = arith.mulf %sum, %s
// BIAS-NEXT:   %bv = tile.load %bias
// BIAS:        tile.store %o, %c
// BIAS-NEXT: }

// The ticket: meet; the partition's first thread releases (one fence, cumulative over
// what the barrier ordered) and adds 1 (reset to 0 by the last); the answer to every
// thread after its acquire; the partials read from L2, in order.
// PTX:      st.global.f32
// PTX:      bar.sync [[BAR:[0-9]+]], 128;
// PTX:      fence.acq_rel.gpu;
// PTX-NEXT: atom.acq_rel.gpu.global.add.u32 [[NEW:%r[0-9]+]], [[[ADDR:%rd[0-9]+]]], {{%r[0-9]+}};
// PTX-NEXT: mov.u32 [[OLD:%r[0-9]+]], [[NEW]];
// PTX:      add.u32 [[NEXT:%r[0-9]+]], [[OLD]], {{%r[0-9]+}};
// PTX-NEXT: setp.eq.u32 {{%p[0-9]+}}, [[NEXT]], {{%r[0-9]+}};
// PTX:      st.global.u32 [[[ADDR]]], {{%r[0-9]+}};
// PTX:      bar.red.or.pred [[LAST:%p[0-9]+]], [[BAR]], 128, {{%p[0-9]+}};
// PTX-NEXT: @![[LAST]] bra.uni
// PTX:      ld.global.cg.f32
// PTX:      ld.global.cg.f32
// PTX:      add.f32

// Stream-K: the share comes from the tile order (tile.split_info). A split program
// stores its partial at its slot and takes the ticket; the epilogue reads the ordered sum
// (the last of a split tile's programs) or the accumulator (a tile of one program), and
// the other split programs skip it.
// STREAM:      tile.kernel @gemm({{.*}}%tawac_splitk_partials: !tile.tensor<?x128x256xf32>, %tawac_splitk_tickets: !tile.tensor<?xi32>)
// STREAM-SAME: tawac.workspace = {tawac_splitk_partials = {dtype = "f32", zero = 0 : i64, shape = [{sms = 1 : i64}, {const = 128 : i64}, {const = 256 : i64}]}, tawac_splitk_tickets = {dtype = "i32", zero = 1 : i64, shape = [{sms = 1 : i64}]}}
// STREAM-SAME: tawac.decomposition = {kind = "stream_k", max_splits = 4 : i64}
// STREAM:      %splits, %split, %slot0 = tile.split_info
// STREAM:      %acc = scf.for %k = %k_lo to %k_hi
// STREAM:      %shared = arith.cmpi ugt, %splits, %{{.*}} : index
// STREAM-NEXT: %last = scf.if %shared -> (i1) {
// STREAM-NEXT:   %[[SLOT:.*]] = arith.addi %slot0, %split : index
// STREAM-NEXT:   tile.store %acc, %tawac_splitk_partials[%[[SLOT]], %[[Z:.*]], %[[Z]]]
// STREAM-NEXT:   %[[T:.*]] = tile.arrive %tawac_splitk_tickets[%slot0] count %splits
// STREAM-NEXT:   scf.yield %[[T]] : i1
// STREAM-NEXT: } else {
// STREAM:      %tile_sum = scf.if %last -> (tensor<128x256xf32>) {
// STREAM-NEXT:   %sum = tile.split_sum %tawac_splitk_partials[%slot0, %[[Z]], %[[Z]]] count %splits max 4
// STREAM-NEXT:   scf.yield %sum
// STREAM-NEXT: } else {
// STREAM-NEXT:   scf.yield %acc
// STREAM-NEXT: }
// STREAM-NEXT: %[[TRUE:.*]] = arith.constant true
// STREAM-NEXT: %[[ALONE:.*]] = arith.xori %shared, %[[TRUE]]
// STREAM-NEXT: %epilogue = arith.ori %last, %[[ALONE]] : i1
// STREAM-NEXT: scf.if %epilogue {
// STREAM-NEXT:   %o = arith.truncf %tile_sum
// STREAM-NEXT:   tile.store %o, %c[%m0, %n0]

// The tile loop: whole waves' tiles alone, the last wave's split min(4, ctas / rest) ways.
// TAIL:      %[[CTAS:.*]] = hopper.num_ctas
// TAIL:      %[[WAVES:.*]] = arith.divui %[[T:.*]], %[[CTAS]] : index
// TAIL-NEXT: %dp_tiles = arith.muli %[[WAVES]], %[[CTAS]] : index
// TAIL-NEXT: %[[REST:.*]] = arith.subi %[[T]], %dp_tiles : index
// TAIL:      %tail_splits = arith.maxui
// TAIL:      %programs = arith.addi %dp_tiles
// TAIL:      scf.for %tile = %{{.*}} to %programs step %[[CTAS]]
// TAIL-NOT:  tile.split_info

// -----

// ERR: error: split-k: the accumulator must start at zero (arith.constant dense<0.0>): each split would add its initial value
tile.kernel @acc_init(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %init = tile.load %c[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%x = %init) -> (tensor<128x128xf32>) {
    %p = tile.load %a[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %q = tile.load %b[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %p, %q, %x transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %c[%c0, %c0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// ERR: error: split-k: the loop must only add tile.dot products into its accumulator (each split sums its own steps, and the partial sums are added)
tile.kernel @rescaled(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%x = %z) -> (tensor<128x128xf32>) {
    %p = tile.load %a[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %q = tile.load %b[%c0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %p, %q, %x transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %h = arith.constant dense<0.5> : tensor<128x128xf32>
    %e = arith.mulf %d, %h : tensor<128x128xf32>
    scf.yield %e : tensor<128x128xf32>
  }
  tile.store %acc, %c[%c0, %c0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// ERR: error: split-k: needs program id z free (the splits go along it)
tile.kernel @batched(%a: !tile.tensor<?x?x?xbf16>, %b: !tile.tensor<?x?x?xbf16>, %c: !tile.tensor<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bz = tile.program_id z
  %K = tile.dim %a[2] : !tile.tensor<?x?x?xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%x = %z) -> (tensor<128x128xf32>) {
    %p = tile.load %a[%bz, %c0, %k] : !tile.tensor<?x?x?xbf16> -> tensor<128x64xbf16>
    %q = tile.load %b[%bz, %c0, %k] : !tile.tensor<?x?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %p, %q, %x transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %c[%bz, %c0, %c0] : tensor<128x128xf32> -> !tile.tensor<?x?x?xf32>
  tile.return
}

// -----

// ERR: error: split-k: needs exactly one loop of tile.dot in the kernel's body, found 0
tile.kernel @no_loop(%a: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  tile.store %x, %c[%c0, %c0] : tensor<128x64xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
