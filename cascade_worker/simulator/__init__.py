"""Installing the real Accel-Sim: `cascade simulator install|status` (cli.py) and where a build
lives (layout.py, which the server reads to find it)."""
