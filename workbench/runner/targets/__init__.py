"""Targets: where an experiment's arms are applied (sim, local commands, SSH hosts, the transfer kernel)."""
