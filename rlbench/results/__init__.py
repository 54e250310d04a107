"""A results folder: its layout (every file name), safe writes, the lock, typed records, table schemas.

The bottom of the results layer: it knows where things are and how they are written, never how a
number is derived (that is rlbench.analysis, which reads from here).
"""
