"""Student I: waits for something that never comes before it starts reading."""

import time

while True:
    time.sleep(1)
