"""Measuring a running trial from outside: the utilization sampler, and the machine it runs on."""
