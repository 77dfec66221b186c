"""Print the Triton kernel torch.compile generates for torch.softmax over the last dim of an
f32 [32768, 1024] tensor, with the config its autotuner picked (to compare with TILE).

    TORCH_LOGS=output_code python3 lab/scripts/inductor_softmax_code.py
"""

import torch

x = torch.randn(32768, 1024, device="cuda")
f = torch.compile(lambda t: torch.softmax(t, -1))
for _ in range(3):
    f(x)
torch.cuda.synchronize()

# the autotuner's pick, from inductor's cache
import glob  # noqa: E402
import os  # noqa: E402

from torch._inductor.runtime.cache_dir_utils import cache_dir  # noqa: E402

for path in glob.glob(os.path.join(cache_dir(), "**", "*.best_config"), recursive=True):
    print(path, open(path).read())
