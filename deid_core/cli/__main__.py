"""``python -m deid_core.cli``."""
import sys

from .main import main

sys.exit(main())
