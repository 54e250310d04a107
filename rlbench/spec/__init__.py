"""The sweep spec: the YAML model, loading and validation, and the plan of trials."""
