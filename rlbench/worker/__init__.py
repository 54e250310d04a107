"""Inside the trial and Ray worker processes: the trial entry, the reaper, /proc and NVML reading, the cluster
node samplers and tasks; and, for the same reason (it loads before anything else), the command's signal
handler (interrupts). Standard library only at module level (asv keeps such code in its own
package, asv_runner, for the same reason): it runs where only Python and Ray may be installed, or
with no site packages at all (the reaper). tests/test_architecture.py enforces it and lists the few
imports a function here may make of more (the trial entry: the plan model, the adapter, Ray).
"""
