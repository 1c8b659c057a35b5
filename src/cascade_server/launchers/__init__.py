"""Launchers start sims somewhere (manual, local subprocesses, Slurm) and stop them."""
