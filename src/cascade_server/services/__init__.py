"""What the server does, below HTTP and above storage: runs and their sims (run_service), the
comparisons and Perfetto traces built from results (run_comparison). Services raise domain
errors (`cascade_server.domain_errors`), never HTTP ones."""
