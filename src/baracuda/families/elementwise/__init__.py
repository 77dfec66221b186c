"""Elementwise family: unary (with and without parameters), binary with broadcasting and type
promotion, lerp with a scalar weight, ternary, comparison, cast and gated activations,
forward and backward.

Modules, each importing only those before it: `table` (the kind rows and dtype rules; the kind
enums are generated from it) -> `descriptors` -> `codes` (the op codes as named constexprs) ->
`special`, `ops`, `ops_nary` (formulas) -> `kernels` -> `launch` -> `plans`, `plans_more` ->
`custom_ops` (torch custom ops) -> `torch_api` (torch's names); `reference`, `spec_inputs`,
`spec_nary`, `spec_more`, `spec_bench` -> `spec`.

To add a kind:
1. append its row to the kind's table in `table.py` (name, dtype rule, float64 torch reference,
   test domain; `api="torch"` to get the torch-named function generated, `diff=False` when it
   has no gradient). The enum member (`UnaryKind.<NAME>`) and the op-code constant
   (`U_<NAME>`, `B_<NAME>`, ...) follow from the row.
2. add its forward branch (`elif OP == U_<NAME>:`) to `apply_unary` in `ops.py` (binary,
   gated and comparison kinds: `apply_binary` in `ops_nary.py`; ternary: `apply_ternary`), and
   its derivative branch to the matching `grad_*` function.
3. the specs build a test case for every row (every float element, integers per its rule):
   run `tests/test_contract.py -k <Plan>`; a kind whose torch reference needs a special input
   range or tolerance gets it in its row (`domain`) or beside the spec.
"""

from ...core.registry import export_public
from . import descriptors, isin, packbits, plans, plans_more, table

__all__ = export_public(globals(), table, descriptors, plans, plans_more, isin, packbits)
