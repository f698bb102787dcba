print("bench-wire: not written yet")
