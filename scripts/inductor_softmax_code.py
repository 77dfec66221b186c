"""Print the Triton kernel torch.compile generates for torch.softmax over the last dim of an
f32 [32768, 1024] tensor, with the config its autotuner picked (to compare with TILE).

    TORCH_LOGS=output_code python3 scripts/inductor_softmax_code.py
"""

import torch

x = torch.randn(32768, 1024, device="cuda")
f = torch.compile(lambda t: torch.softmax(t, -1))
for _ in range(3):
    f(x)
torch.cuda.synchronize()
