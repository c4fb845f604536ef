"""Schedule decisions as data: the shared-memory plan (`smem`)."""
