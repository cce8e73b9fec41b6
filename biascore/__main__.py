import sys

from biascore.cli.main import main

sys.exit(main())
