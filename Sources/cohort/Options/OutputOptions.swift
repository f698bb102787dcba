import ArgumentParser

/// `--json`: machine-readable output with the stable shapes of docs/cli.md ("--json shapes").
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (stable shapes, documented in docs/cli.md) instead of text.")
    var json = false
}
