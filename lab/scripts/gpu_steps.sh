#!/usr/bin/env bash
# One device call, named steps (session 10's experiments): bash lab/scripts/gpu_steps.sh STEP...
# Steps: tests, bwdtests, normtests, smtests (CUDA test selections), sweep
# (lab/scripts/norm_bwd_sweep.py; SWEEP_SHAPES / SWEEP_CONFIGS), fwdsweep (lab/scripts/smem_sweep.py norm,
# bf16 and f32), bits (lab/scripts/norm_bwd_bits.py),
# graph / fwdgraph (lab/scripts/fwbw_graph.py: fwd+bwd / fwd), benchnorm / benchsm (normalization / softmax bench
# --quick into $OUT), tune
# (layer_norm tiles at [32768, 1024]), tile (lab/scripts/tile_vs_liger.py), padab (lab/scripts/norm_pad_ab.py:
# every norm row padded first against last, * the rule's pick), losstests / benchloss (cross-entropy
# suites / bench), benchsm32 (softmax f32 rows), spectests (contract cases of
# session 14's new dtypes), benchlnfwd (every norm forward row, bf16 and f32), attntests (attention suites + contract cases), benchattn (attention --quick), wsprobe (lab/scripts/attn_ws_probe.py, WS_SHAPES), replaytests, ewtests (elementwise / segment / normalization unit tests), benchew (elementwise bench --quick), sol
# (lab/scripts/norm_sol_probe.py: layer_norm's traffic without the statistics, SOL_SHAPES), tileab (lab/scripts/tile_peer_ab.py: f32 [32768, 1024] tiles against torch.compile), tilegraph (the same in CUDA graphs), smquick (softmax suites + contract cases), f32chunks (tile_vs_liger.py long), smab (lab/scripts/peer_ab.py: softmax TILE rows against Liger and torch.compile, interleaved), fuzz / fuzzdebug (the
# differential fuzz files, FUZZ_FILES or all, GPU case counts; FUZZ_WORKERS, 6 by default: 12 ran
# the 80 GB card out of memory in session 18). Carry .whl and .commit.
export PYTHONPATH=$PWD/src:/tmp/site; python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1; export BARACUDA_COMMIT=$(cat .commit)
for step in "$@"; do
  case $step in
    tests) timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 -o addopts="" -W ignore tests/families/test_norm_smem.py tests/families/test_softmax_smem.py tests/families/test_loss_smem.py tests/test_launch_replay.py 2>&1 | grep -v Warn | tail -15 ;;
    sweep) SWEEP_CONFIGS=${SWEEP_CONFIGS:-} timeout 240 python3 lab/scripts/norm_bwd_sweep.py 2>&1 | grep -v Warning ;;
    bwdtests) timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 -o addopts="" -W ignore --tb=short tests/families/test_norm_smem.py -k backward 2>&1 | grep -E "^E |passed|failed|Error" | head -40 ;;
    fwdsweep) for dt in bfloat16 float32; do SWEEP_DTYPE=$dt SWEEP_SHAPES=${SWEEP_SHAPES:-1024x65536} timeout 150 python3 lab/scripts/smem_sweep.py norm 2>&1 | grep -v Warning; done ;;
    bits) timeout 200 python3 lab/scripts/norm_bwd_bits.py 2>&1 | grep -v Warning ;;
    benchnorm) timeout 300 python3 -m baracuda.cli bench --family normalization --quick --json $OUT/norm.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/norm.json ;;
    benchsm) timeout 400 python3 -m baracuda.cli bench --family softmax --quick --json $OUT/softmax.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/softmax.json ;;
    graph) timeout 280 python3 lab/scripts/fwbw_graph.py 2>&1 | grep -v Warning; timeout 280 python3 lab/scripts/fwbw_graph.py float32 2>&1 | grep -v Warning ;;
    fwdgraph) for dt in bfloat16 float32; do timeout 200 python3 lab/scripts/fwbw_graph.py $dt fwd 2>&1 | grep -v Warning; done ;;
    normtests) timeout 420 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore -k "RMSNorm or LayerNorm or normalization or norm_smem or test_frontend or test_core or launch_replay or softmax_smem or loss_smem" tests/test_contract.py tests/test_core.py tests/test_frontend.py tests/test_launch_replay.py tests/families/test_normalization.py tests/families/test_norm_smem.py tests/families/test_softmax_smem.py tests/families/test_loss_smem.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -30 ;;
    smtests) timeout 480 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore -k "Softmax or CrossEntropy or Nll or softmax or loss or smem or hopper" tests/test_contract.py tests/families/test_softmax.py tests/families/test_loss.py tests/families/test_norm_smem.py tests/families/test_softmax_smem.py tests/families/test_loss_smem.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -30 ;;
    tune) timeout 260 python3 -m baracuda.families.normalization.tune 110 both bfloat16 0 layer 2>&1 | grep -v Warning | tail -16 ;;
    tile) timeout 200 python3 lab/scripts/tile_vs_liger.py 2>&1 | grep -v Warning ;;
    losstests) timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 -o addopts="" -W ignore tests/families/test_loss.py tests/families/test_loss_smem.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -20 ;;
    benchloss) timeout 200 python3 -m baracuda.cli bench --family loss --json $OUT/loss.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/loss.json ;;
    benchsm32) timeout 400 python3 -m baracuda.cli bench --family softmax --match float32 --json $OUT/softmax32.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/softmax32.json ;;
    spectests) timeout 300 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore tests/test_contract.py -k "IndexSelect or Gather or Scatter or IndexAdd or IndexCopy or GroupedGemm or KvCache or InstanceNorm or EmbeddingBag or EmbeddingRenorm" 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -20 ;;
    benchlnfwd) timeout 300 python3 -m baracuda.cli bench --family normalization --match "norm fwd [" --json $OUT/normfwd.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/normfwd.json ;;
    fuzz) timeout ${FUZZ_TIMEOUT:-420} python3 -m pytest -q -p no:cacheprovider -n ${FUZZ_WORKERS:-6} -o addopts="" -W ignore --tb=line -rfE ${FUZZ_FILES:-tests/families/test_fuzz_*.py} > $OUT/fuzz.log 2>&1; grep -E "^(FAILED|ERROR)" $OUT/fuzz.log | cut -c1-600 | head -${FUZZ_SHOW:-40}; tail -1 $OUT/fuzz.log ;;
    attntests) timeout 480 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore -k "Sdpa or Rope or KvCache or attention" tests/test_contract.py tests/families/test_attention.py tests/families/test_fuzz_attention.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -30 ;;
    benchattn) timeout 400 python3 -m baracuda.cli bench --family attention --quick --json $OUT/attn.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/attn.json ;;
    fuzzdebug) CUDA_LAUNCH_BLOCKING=1 timeout ${FUZZ_TIMEOUT:-420} python3 -m pytest -q -p no:cacheprovider -n ${FUZZ_WORKERS:-6} -o addopts="" -W ignore --tb=short ${FUZZ_FILES:-tests/families/test_fuzz_*.py} > $OUT/fuzz${FUZZ_TAG}.log 2>&1; tail -1 $OUT/fuzz${FUZZ_TAG}.log ;;
    padab) timeout 300 python3 lab/scripts/norm_pad_ab.py 2>&1 | grep -v Warning ;;
    wsprobe) timeout 560 python3 lab/scripts/attn_ws_probe.py ${WS_SHAPES:-all} > $OUT/wsprobe.log 2>&1; grep -v Warning $OUT/wsprobe.log | cut -c1-300 | tail -40 ;;
    smab) for peer in liger compile; do timeout 280 python3 lab/scripts/peer_ab.py softmax $peer ${AB_ROUNDS:-5} "softmax fwd [32768, 1024]" "softmax fwd [16384, 4096]" "softmax fwd [4096, 16384]" 2>&1 | grep -v Warn; done ;;
    f32chunks) timeout 200 python3 lab/scripts/tile_vs_liger.py long 2>&1 | grep -v Warning ;;
    smquick) timeout 300 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore tests/families/test_softmax.py tests/families/test_softmax_smem.py tests/test_contract.py -k "softmax or Softmax" 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -20 ;;
    tileab) BARACUDA_REPLAY=0 timeout 240 python3 lab/scripts/tile_peer_ab.py ${AB_ROUNDS:-5} float32 32768x1024 ${AB_TILES:-4x4 2x4 1x2 1x4 4x8} 2>&1 | grep -v Warn ;;
    tilegraph) TILE_AB_GRAPH=1 BARACUDA_REPLAY=0 timeout 200 python3 lab/scripts/tile_peer_ab.py ${AB_ROUNDS:-5} float32 32768x1024 ${AB_TILES:-4x4 1x4 1x2} 2>&1 | grep -v Warn ;;
    ewtests) timeout 400 python3 -m pytest -q -p no:cacheprovider -n 12 -o addopts="" -W ignore tests/families/test_elementwise.py tests/families/test_elementwise_addcdiv.py tests/families/test_segment.py tests/families/test_normalization.py tests/test_core.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -20 ;;
    benchew) timeout 300 python3 -m baracuda.cli bench --family elementwise --quick --json $OUT/ew.json 2>&1 | grep -v "it/s\]" | tail -3; python3 -m baracuda.cli bench --from-json $OUT/ew.json ;;
    sol) timeout 200 python3 lab/scripts/norm_sol_probe.py ${SOL_SHAPES:-1024x65536} 2>&1 | grep -v Warning ;;
    replaytests) timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 -o addopts="" -W ignore tests/test_launch_replay.py 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -10 ;;
  esac
done
