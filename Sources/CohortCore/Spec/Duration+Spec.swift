// Spec durations ("500ms", "5m") are parsed here; see SpecParser.
