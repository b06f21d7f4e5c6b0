"""Student H: reads its settings from a variable the contract does not have, and exits."""

import os
import sys

stream = os.environ.get("ORDLAB_STREAM_NAME")
if not stream:
    sys.exit("error: ORDLAB_STREAM_NAME is not set")
