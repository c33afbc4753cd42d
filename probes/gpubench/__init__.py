"""gpubench: Triton-instrumented GPU benchmark probes, one JSON record per measurement.

annex runs this suite as an indexed Kubernetes Job on every GPU node (``manifest.py``); each
pod prints its records to its log, where ``collectors/gpubench`` reads them. The suite:

- ``kernels.py``: the Triton kernels (bf16 and fp8 GEMM, streaming copy and triad, fused
  softmax, layer norm), autotuned on a GPU, one fixed configuration under the interpreter;
- ``harness.py``: checks each kernel against ``torch`` before timing it, times it
  (``triton.testing.do_bench`` on a GPU, ``perf_counter`` under the interpreter, the same
  quantile maths), and builds the records (reference §5.1);
- ``device.py``: which GPU, driver and pod this is; switches Triton to its interpreter when
  there is no GPU (it must happen before any kernel is defined);
- ``work.py`` and ``peaks.py``: pure functions of FLOPs/bytes and the peak table, shared with
  the collector;
- ``python -m probes.gpubench``: the command the Job runs.

Importing this package imports neither ``torch`` nor ``triton``: the manifest generator and the
collector use its pure modules without the GPU stack installed.
"""
