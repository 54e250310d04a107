import sys

from rlbench.commands import main

sys.exit(main())
