// Decode attention over a paged KV cache (vLLM's block table, FlashInfer's "HND" page
// layout): sequence b's keys are in pages table[b, 0], table[b, 1], ... of the caches
// kc and vc ([pages, K/V heads, PAGE, 128] bf16), lens[b] keys in all (any length: the
// last page partly used). Q and O are [batch, heads, query rows, 128]; query head h
// reads K/V head h / GROUP. One page is one key block (PAGE = BLOCK_N: the launch checks
// the caches' page size). As attention_decode.mlir, the compiler groups the heads
// (group-heads) and may split the keys (--split-k S: each split a run of pages).
// `scale_log2e` is the softmax scale times log2(e): the kernel works in base 2.
tile.kernel @attention_paged(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "L", "D"]>, %kc: !tile.tensor<?x?x?x?xbf16, ["P", "HK", "PAGE", "D"]>, %vc: !tile.tensor<?x?x?x?xbf16, ["P", "HK", "PAGE", "D"]>, %table: !tile.tensor<?x?xi32, ["B", "MAXP"]>, %lens: !tile.tensor<?xi32, ["B"]>, %o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "L", "D"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 64, BLOCK_N = 128, GROUP = 8}, tawac.checks = [{arg = "kc", dim = 2, equals = {const = $BLOCK_N}}, {arg = "vc", dim = 2, equals = {const = $BLOCK_N}}]} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %group = arith.constant $GROUP : index
  %kvh = arith.divui %h, %group : index
  %m0 = arith.muli %pid_m, %bm : index
  %S = tile.load_index %lens[%b] : !tile.tensor<?xi32, ["B"]>
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "L", "D"]> -> tensor<$BLOCK_Mx128xbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx128xf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mxf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %limit = tile.splat %S : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %S step %bn iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mx128xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %pi = arith.divui %n, %bn : index
    %page = tile.load_index %table[%b, %pi] : !tile.tensor<?x?xi32, ["B", "MAXP"]>
    %kt = tile.load %kc[%page, %kvh, %c0, %c0] : !tile.tensor<?x?x?x?xbf16, ["P", "HK", "PAGE", "D"]> -> tensor<$BLOCK_Nx128xbf16>
    %vt = tile.load %vc[%page, %kvh, %c0, %c0] : !tile.tensor<?x?x?x?xbf16, ["P", "HK", "PAGE", "D"]> -> tensor<$BLOCK_Nx128xbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx128xbf16>, tensor<$BLOCK_Nx128xbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %n_end = arith.addi %n, %bn : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %s2 = scf.if %ragged -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
      %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %masked = tile.select %inside, %s, %neg : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
      scf.yield %masked : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    } else {
      scf.yield %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    }
    %raw_max = tile.reduce max %s2, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %row_max = arith.mulf %raw_max, %scale_v : tensor<$BLOCK_Mxf32>
    %m_new = arith.maximumf %m_j, %row_max : tensor<$BLOCK_Mxf32>
    %m_b = tile.broadcast %m_new, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s_scaled = arith.mulf %s2, %scale : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %shifted = arith.subf %s_scaled, %m_b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = math.exp2 %shifted : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %row_sum = tile.reduce sum %p, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %dm = arith.subf %m_j, %m_new : tensor<$BLOCK_Mxf32>
    %alpha = math.exp2 %dm : tensor<$BLOCK_Mxf32>
    %l_scaled = arith.mulf %l_j, %alpha : tensor<$BLOCK_Mxf32>
    %l_new = arith.addf %l_scaled, %row_sum : tensor<$BLOCK_Mxf32>
    %alpha_b = tile.broadcast %alpha, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
    %acc_scaled = arith.mulf %acc_j, %alpha_b : tensor<$BLOCK_Mx128xf32>
    %p16 = arith.truncf %p : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %acc_new = tile.dot %p16, %vt, %acc_scaled : tensor<$BLOCK_Mx$BLOCK_Nxbf16>, tensor<$BLOCK_Nx128xbf16> -> tensor<$BLOCK_Mx128xf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<$BLOCK_Mx128xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>
  }
  %l_b = tile.broadcast %l_i, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
  %out = arith.divf %acc, %l_b fastmath<arcp> : tensor<$BLOCK_Mx128xf32>
  %out16 = arith.truncf %out : tensor<$BLOCK_Mx128xf32> to tensor<$BLOCK_Mx128xbf16>
  tile.store %out16, %o[%b, %h, %m0, %c0] : tensor<$BLOCK_Mx128xbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "L", "D"]>
  tile.return
}
