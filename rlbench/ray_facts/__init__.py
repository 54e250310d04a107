"""Ray's own facts, in one room at the bottom of the house: how Ray's processes are named (:mod:`.processes`) and
the one seam to Ray's private API (:mod:`.private`). Standard library only at module level, importing nothing of
rlbench: the adapters (the one role classifier), the worker room (the node samplers, the runtime), the studies
(servebench) and everything above import it, as they import nothing of each other (docs/ARCHITECTURE.md).
"""
