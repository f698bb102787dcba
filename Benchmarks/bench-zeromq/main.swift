print("bench-zeromq: not written yet")
