import sys

from rlbench.cli import main

sys.exit(main())
