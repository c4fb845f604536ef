// reuse-slots: a kernel without MMAs whose second loop reads the tiles its first read (an
// RMS norm: the sum of squares, then the scaled values). The planner marks the aref
// `resident` and gives it the deepest ring shared memory holds (55 slots of 8 x 256 bf16,
// the weight's ring kept at 8); with `reuse-slots=false` it keeps the row kernels' 8, and
// a depth given with `stages` stays. The pass predicates the producer's second put on
// the row not fitting (`when %streamed`: T = ceil(N / 256) > 55), the consumer's first
// release likewise, and the second loop reads and releases the first loop's slot where
// the row fits (a select of the two indices). persistent numbers the next program's
// transfers after T of them where the row fits, 2T where not; lower-aref puts the
// predicated put and release under scf.if. With `l2-hints` (on; the schedule prints
// `resident l2`) the first loop's put keeps its lines in L2 (`l2 "evict_last"`) where the
// row does not fit (`l2_if %streamed`), the second's and the kernel's stores let theirs
// go first (`l2 "evict_first"`), and
// lower-aref hands the priority to the TMA copies. With `hold-slots` (on; the schedule
// prints `hold 39`: 55 slots less 64 KiB of 4 KiB ones) a row that does not fit keeps its
// first 39 tiles in their slots for the second loop, which loads only the others again,
// through slots 39..54: each transfer's index is computed from the iteration j and the
// program's ordinal p (`aref.ordinal`; persistent makes it the tile count and adds no
// base): p * T + j where the row fits, D * p + j for a held tile, 39 + c mod 16 + 55 * (c
// / 16) for the c-th streamed one; the second loop's put and the first loop's release
// happen only for the streamed tiles (j >= 39 where the row does not fit). The runs
// above the HOLD ones turn it off to check the whole-row path alone. A schedule that
// makes an aref written by one loop resident, or holds all its slots, is a located
// error.
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic reuse-slots=false}' | filecheck %s --check-prefix=OFF
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic l2-hints=false hold-slots=false},pipeline,reuse-slots' | filecheck %s --check-prefix=NOHINT
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=4}' | filecheck %s --check-prefix=GIVEN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic hold-slots=false},pipeline,reuse-slots' | filecheck %s --check-prefix=REUSE
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic hold-slots=false},pipeline,reuse-slots,persistent' | filecheck %s --check-prefix=PERSIST
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic hold-slots=false},pipeline,reuse-slots,persistent,coarse-pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=LOWER
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic},pipeline,reuse-slots' | filecheck %s --check-prefix=HOLD
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic},pipeline,reuse-slots,persistent' | filecheck %s --check-prefix=HOLDP
// RUN: sed -e 's/@rmsnorm(/@given(/' -e 's/attributes {}/attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [x: depth 8, w: depth 8 resident]>}/' %s > %t.mlir
// RUN: not tawac opt %t.mlir -p 'warp-specialize,plan' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: sed -e 's/attributes {}/attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [x: depth 8 resident hold 8, w: depth 8]>}/' %s > %t2.mlir
// RUN: not tawac opt %t2.mlir -p 'warp-specialize,plan' 2>&1 | filecheck %s --check-prefix=ERRHOLD

// PLAN: arefs = [x: depth 55 resident l2 hold 39, w: depth 8]
// NOHINT: arefs = [x: depth 55 resident, w: depth 8]
// NOHINT-NOT: l2 "
// OFF: arefs = [x: depth 8, w: depth 8]
// GIVEN: arefs = [x: depth 4 resident l2, w: depth 4]

// REUSE:      aref.partition producer
// REUSE:        %[[T:.*]] = arith.maxsi
// REUSE-NEXT:   %[[D:.*]] = arith.constant 55 : index
// REUSE-NEXT:   %[[FITS:.*]] = arith.cmpi sle, %[[T]], %[[D]] : index
// REUSE-NEXT:   %[[TRUE:.*]] = arith.constant true
// REUSE-NEXT:   %[[STREAMED:.*]] = arith.xori %[[FITS]], %[[TRUE]] : i1
// REUSE-NEXT:   scf.for
// REUSE:          aref.put %{{.*}}[%{{.*}}], %{{.*}} l2 "evict_last" l2_if %[[STREAMED]] : !aref.aref<[tensor<8x256xbf16>], 55>
// REUSE:        scf.for
// REUSE:          aref.put %{{.*}}[%{{.*}}], %{{.*}} when %[[STREAMED]] l2 "evict_first" : !aref.aref<[tensor<8x256xbf16>], 55>
// REUSE:          aref.put %{{.*}}[%{{.*}}], %{{.*}} : !aref.aref<[tensor<256xbf16>], 8>
// REUSE:      aref.partition consumer
// REUSE:        %[[CFITS:.*]] = arith.cmpi sle
// REUSE:        %[[CSTREAMED:.*]] = arith.xori %[[CFITS]]
// REUSE:        scf.for
// REUSE:          %[[IT:.*]] = arith.divui
// REUSE-NEXT:     aref.get %{{.*}}[%[[IT]]]
// REUSE:          aref.consumed %{{.*}}[%[[IT]]] when %[[CSTREAMED]] : !aref.aref<[tensor<8x256xbf16>], 55>
// REUSE:        scf.for
// REUSE:          %[[LOCAL:.*]] = arith.divui
// REUSE:          %[[SECOND:.*]] = arith.addi %[[LOCAL]], %{{.*}} : index
// REUSE-NEXT:     %[[PICK:.*]] = arith.select %[[CFITS]], %[[LOCAL]], %[[SECOND]] : index
// REUSE-NEXT:     aref.get %{{.*}}[%[[PICK]]] : !aref.aref<[tensor<8x256xbf16>], 55>
// REUSE:          aref.consumed %{{.*}}[%[[PICK]]] : !aref.aref<[tensor<8x256xbf16>], 55>
// REUSE:          tile.store %{{.*}}, %y[%{{.*}}, %{{.*}}] l2 "evict_first"

// PERSIST:      aref.partition producer
// PERSIST:        scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[BASE:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// PERSIST:          scf.for
// PERSIST:          %[[T0:.*]] = arith.maxsi
// PERSIST-NEXT:     scf.for
// PERSIST:          %[[AFTER:.*]] = arith.addi %[[BASE]], %[[T0]] : index
// PERSIST-NEXT:     %[[D:.*]] = arith.constant 55 : index
// PERSIST-NEXT:     %[[FITS:.*]] = arith.cmpi sle, %[[T0]], %[[D]] : index
// PERSIST-NEXT:     %[[ZERO:.*]] = arith.constant 0 : index
// PERSIST-NEXT:     %[[MOVED:.*]] = arith.select %[[FITS]], %[[ZERO]], %{{.*}} : index
// PERSIST-NEXT:     %[[NEXT:.*]] = arith.addi %[[AFTER]], %[[MOVED]] : index
// PERSIST:          scf.yield %{{.*}}, %[[NEXT]], %{{.*}} : index, index, index

// LOWER:      aref.partition producer
// LOWER:        scf.for
// LOWER:          hopper.tma_load %x[%{{.*}}], %{{.*}}[%{{.*}}], %full l2 "evict_last" l2_if %streamed
// LOWER:          scf.if %streamed {
// LOWER:            hopper.mbarrier_wait %empty
// LOWER-NEXT:       hopper.mbarrier_arrive_expect_tx %full
// LOWER-NEXT:       hopper.tma_load %x[%{{.*}}], %{{.*}}[%{{.*}}], %full l2 "evict_first"
// LOWER-NEXT:     }
// LOWER:      aref.partition consumer
// LOWER:          scf.if %streamed_1 {
// LOWER:            hopper.mbarrier_arrive %empty
// LOWER-NEXT:     }

// HOLD:      aref.partition producer
// HOLD:        %[[T:.*]] = arith.maxsi
// HOLD-NEXT:   %{{.*}} = arith.constant 55 : index
// HOLD-NEXT:   %[[FITS:.*]] = arith.cmpi sle, %[[T]], %{{.*}} : index
// HOLD-NEXT:   %[[P:.*]] = aref.ordinal
// HOLD-NEXT:   %[[H:.*]] = arith.constant 39 : index
// HOLD-NEXT:   %[[FIT0:.*]] = arith.muli %[[P]], %[[T]] : index
// HOLD:        %[[HELD0:.*]] = arith.muli %[[P]], %{{.*}} : index
// HOLD:        %[[FIRST:.*]] = arith.select %[[FITS]], %[[T]], %[[H]] : index
// HOLD-NEXT:   scf.for
// HOLD-NEXT:     arith.subi
// HOLD-NEXT:     %[[J:.*]] = arith.divui
// HOLD-NEXT:     %[[FIT:.*]] = arith.addi %[[FIT0]], %[[J]] : index
// HOLD-NEXT:     %[[ISHELD:.*]] = arith.cmpi ult, %[[J]], %[[H]] : index
// HOLD-NEXT:     %[[HELD:.*]] = arith.addi %[[HELD0]], %[[J]] : index
// HOLD:          %[[S:.*]] = arith.constant 16 : index
// HOLD-NEXT:     %[[RND:.*]] = arith.divui %[[C:.*]], %[[S]] : index
// HOLD-NEXT:     %[[REM:.*]] = arith.remui %[[C]], %[[S]] : index
// HOLD-NEXT:     %[[LOW:.*]] = arith.addi %[[H]], %[[REM]] : index
// HOLD-NEXT:     %{{.*}} = arith.constant 55 : index
// HOLD-NEXT:     %[[UP:.*]] = arith.muli %[[RND]], %{{.*}} : index
// HOLD-NEXT:     %[[STREAM:.*]] = arith.addi %[[LOW]], %[[UP]] : index
// HOLD-NEXT:     %[[PART:.*]] = arith.select %[[ISHELD]], %[[HELD]], %[[STREAM]] : index
// HOLD-NEXT:     %[[IX:.*]] = arith.select %[[FITS]], %[[FIT]], %[[PART]] : index
// HOLD-NEXT:     %[[MOVED:.*]] = arith.cmpi uge, %[[J]], %[[FIRST]] : index
// HOLD:          aref.put %{{.*}}[%[[IX]]], %{{.*}} l2 "evict_last" l2_if %[[MOVED]] : !aref.aref<[tensor<8x256xbf16>], 55>
// HOLD:        scf.for
// HOLD:          %[[MOVED2:.*]] = arith.cmpi uge
// HOLD:          aref.put %{{.*}}[%{{.*}}], %{{.*}} when %[[MOVED2]] l2 "evict_first" : !aref.aref<[tensor<8x256xbf16>], 55>
// HOLD:      aref.partition consumer
// HOLD:        aref.ordinal
// HOLD:        scf.for
// HOLD:          %[[CIX:slot_it[_0-9]*]] = arith.select
// HOLD-NEXT:     %[[CMOVED:.*]] = arith.cmpi uge
// HOLD:          aref.get %{{.*}}[%[[CIX]]] : !aref.aref<[tensor<8x256xbf16>], 55>
// HOLD:          aref.consumed %{{.*}}[%[[CIX]]] when %[[CMOVED]] : !aref.aref<[tensor<8x256xbf16>], 55>
// HOLD:        scf.for
// HOLD:          %[[CIX2:slot_it[_0-9]*]] = arith.select
// HOLD-NEXT:     arith.cmpi uge
// HOLD:          aref.get %{{.*}}[%[[CIX2]]] : !aref.aref<[tensor<8x256xbf16>], 55>
// HOLD:          aref.consumed %{{.*}}[%[[CIX2]]] : !aref.aref<[tensor<8x256xbf16>], 55>

// HOLDP:      aref.partition consumer
// HOLDP-NOT:    aref.ordinal
// HOLDP:        scf.for %{{.*}} iter_args(%[[COUNT:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// HOLDP:          %{{.*}} = arith.muli %[[COUNT]], %{{.*}} : index
// HOLDP:          %[[IX:slot_it[_0-9]*]] = arith.select
// HOLDP-NEXT:     arith.cmpi uge
// HOLDP:          aref.get %{{.*}}[%[[IX]]] : !aref.aref<[tensor<8x256xbf16>], 55>

// ERRHOLD: error: reuse-slots: aref 'x' holds 8 slots in the schedule; a hold needs a resident aref and keeps 1 to 7 of its 8 slots (the others stream)

// ERR: reuse-slots.mlir.tmp.mlir:{{[0-9]+}}:{{[0-9]+}}: error: reuse-slots: aref 'w' is resident in the schedule, but it is written by one loop
tile.kernel @rmsnorm(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant 8 : index
  %bn = arith.constant 256 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %ss = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<8xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<8x256xbf16>
    %xf = arith.extf %xt : tensor<8x256xbf16> to tensor<8x256xf32>
    %sq = arith.mulf %xf, %xf : tensor<8x256xf32>
    %s = tile.reduce sum %sq, 1 : tensor<8x256xf32> -> tensor<8xf32>
    %a = arith.addf %acc, %s : tensor<8xf32>
    scf.yield %a : tensor<8xf32>
  }
  %r = math.rsqrt %ss : tensor<8xf32>
  %rb = tile.broadcast %r, 0 : tensor<8xf32> -> tensor<8x256xf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<8x256xbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<256xbf16>
    %xf = arith.extf %xt : tensor<8x256xbf16> to tensor<8x256xf32>
    %wf = arith.extf %wt : tensor<256xbf16> to tensor<256xf32>
    %wb = tile.broadcast %wf, 1 : tensor<256xf32> -> tensor<8x256xf32>
    %t = arith.mulf %xf, %rb : tensor<8x256xf32>
    %o = arith.mulf %t, %wb : tensor<8x256xf32>
    %o16 = arith.truncf %o : tensor<8x256xf32> to tensor<8x256xbf16>
    tile.store %o16, %y[%m0, %n] : tensor<8x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
