"""autoconfig's walk from one configuration (docs/AUTOCONFIG.md, "The walk"): the session (``session``), how it plans a
step (``plan``), a step decided (``steps``), a step's record (``path``) and what a walk writes (``outputs``)."""
