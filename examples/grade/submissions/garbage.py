"""Student J: prints binary garbage (a stray print of bytes) and dies."""

import os
import sys

sys.stdout.buffer.write(bytes(range(256)) * 64)
sys.stderr.buffer.write(b"\xff\xfe\x1b[31mTraceback: \xc3\x28 bad \x00 bytes\n")
sys.exit(3)
