"""Environments shipped with rlbench, importable as ``envs.<module>:<Class>`` in every env runner."""
