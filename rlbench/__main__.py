import sys

from rlbench.worker.interrupts import install

install()  # first: the imports below take 0.3-0.5 s, and a SIGTERM then must stop the command, not kill it

from rlbench.commands import main  # noqa: E402

sys.exit(main())
