"""rlbench's exit codes, for every command (README.md lists them)."""

#: Done: every trial ok or skipped; compare found no significant regression.
EXIT_OK = 0
#: A trial failed or timed out (the sweep still ran every other trial); compare: a configuration
#: regressed beyond the threshold with significance; reproduce --run: the rerun's own code.
EXIT_FAILED = 1
#: Bad input: the spec, an env, an output or results folder, a flag. Nothing was run or written.
EXIT_BAD_INPUT = 2
#: Ctrl-C, SIGTERM or SIGHUP stopped the sweep (128 + SIGINT, as shells report it); the summary
#: prints the command that resumes.
EXIT_INTERRUPTED = 130
