"""Installing the real Accel-Sim: `cascade simulator install|status` (cli.py) and where a build
lives (cascade_core.simulator_layout, which the server reads to find it)."""
