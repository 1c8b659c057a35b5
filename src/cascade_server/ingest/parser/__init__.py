"""Accel-Sim's output, read: the incremental log parser (`accelsim_log`) and its stats-line reader
(`accelsim_stats`). Pure Python, no I/O: text in, kernels out. Only ingest uses them."""
