"""A package's releases compared (``rlbench history``, docs/VERSIONS.md): the trend and the steps (``trends``), a
history folder read whole (``runs``), the series (``points``), its split (``split``), API changes (``changes``)."""
