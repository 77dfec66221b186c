"""Backends: what the families share below them: launch plumbing (triton_support, torch_ops,
launch_replay, timing), cross-program exchanges (triton_exchange, gluon_chunks), and the
primitives a second family needed (line_reduce: online max/sum and variance merges; grouping,
triton_grouping, rows, triton_rows: sorting and grouping rows by key and reducing them). No
family vocabulary: a backend's kinds are generic and each family maps its own onto them."""
