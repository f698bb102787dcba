print("bench-procedures: not written yet")
