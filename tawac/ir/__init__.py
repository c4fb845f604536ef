"""The IR layer's infrastructure beside the dialects: the xDSL context with tawac's
dialects (`context`), the two front ends' readers (`parser` for tile `.mlir`, `ttir` for
Triton's TTIR) and the verifier of tile programs (`verifier`)."""
