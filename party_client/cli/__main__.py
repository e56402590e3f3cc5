"""``python -m party_client.cli``."""
import sys

from party_client.cli.main import main

sys.exit(main())
