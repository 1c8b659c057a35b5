"""The step-timeline model: from a PyTorch profiler (Kineto) trace and a sim's kernel times to
"how long will a step take on that GPU". Pure: no file, network or database I/O, so the CLI, the
worker, the server and the terminal UI share one implementation.

- `formats`: the three files `cascade timeline import` writes into a trace directory
  (`corrected_timeline.json`, `kernel_mapping.json`, `real_timing.json`; where they are:
  `shared.trace_layout`), as pydantic models.
- `kineto`: a Kineto Chrome trace -> measured steps (kernels assigned to the step whose CPU span
  holds their launch, linked by `correlation`).
- `align`: each step's launches aligned, in order and by demangled name, to the trace's kernels.
- `importer`: the three files from a profile and the trace's kernels.
- `replay`: `cascade simulate`, the measured steps replayed with simulated kernel times
  (`scaled-gaps` host model).
- `compare`: `cascade compare`, simulated steps against the measured ones.
- `stats`: error statistics shared by `compare` and its readers.
"""
