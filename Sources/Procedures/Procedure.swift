// The local engine.
