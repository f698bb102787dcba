import Testing

@testable import CohortSpec

/// `with` of the built-in kinds (shell, sleep, echo, fail), and where their injections write.
@Suite struct BuiltinInputTests {
    func child(_ body: String) -> String {
        "name: g\nchildren:\n  - { name: src, run: echo }\n  - { name: c, \(body) }"
    }

    @Test func aCompleteShellInputIsAccepted() {
        let errors = specErrors(
            child(
                #"run: shell, with: { command: ["sh", "-c", "echo hi"], env: { A_1: "x" }, stdin: "in", cwd: "/tmp" }"#)
        )
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test(arguments: [
        ("run: shell", "children[1].with.command", "missing; shell needs a command"),
        ("run: shell, with: { command: [] }", "children[1].with.command", "a command cannot be empty"),
        ("run: shell, with: { command: \"ls -l\" }", "children[1].with.command", "[\"sh\", \"-c\", \"ls -l\"]"),
        ("run: shell, with: { command: [ls, 1] }", "children[1].with.command[1]", "expected a string, got a number"),
        ("run: shell, with: { command: [\"\"] }", "children[1].with.command[0]", "the program name cannot be empty"),
        ("run: shell, with: { command: [ls], env: { PORT: 8080 } }", "children[1].with.env.PORT", "quote it"),
        ("run: shell, with: { command: [ls], env: [A] }", "children[1].with.env", "expected an object"),
        (
            "run: shell, with: { command: [ls], env: { 1BAD: x } }", "children[1].with.env.1BAD",
            "not an environment variable name"
        ),
        (
            "run: shell, with: { command: [ls], env: { COHORT_CHILD: x } }", "children[1].with.env.COHORT_CHILD",
            "set by the worker"
        ),
        ("run: shell, with: { command: [ls], stdin: [1] }", "children[1].with.stdin", "expected a string"),
        ("run: shell, with: { command: [ls], cwd: \"\" }", "children[1].with.cwd", "cannot be empty"),
        ("run: shell, with: { command: [ls], comand: [x] }", "children[1].with.comand", "did you mean \"command\"?"),
        ("run: shell, with: [ls]", "children[1].with", "the input of shell is an object"),
        ("run: sleep", "children[1].with.seconds", "missing; sleep needs a number of seconds"),
        ("run: sleep, with: { seconds: -1 }", "children[1].with.seconds", "0 or more"),
        ("run: sleep, with: { seconds: \"5\" }", "children[1].with.seconds", "expected a number of seconds"),
        ("run: fail, with: { message: 3 }", "children[1].with.message", "expected a string"),
        ("run: fail, with: { reason: x }", "children[1].with.reason", "fail has no input \"reason\""),
    ])
    func builtinInputsAreChecked(_ body: String, _ path: String, _ message: String) {
        expectSpecError(child(body), at: path, containing: message)
    }

    @Test func aRequiredInputMayComeFromAnInjection() {
        let errors = specErrors(child("run: shell, inject: [{ from: src, select: argv, into: command }]"))
        #expect(errors.isEmpty, "\(errors)")
        let sleep = specErrors(child("run: sleep, inject: [{ from: src, into: seconds }]"))
        #expect(sleep.isEmpty, "\(sleep)")
    }

    @Test func anInjectionIntoTheWholeInputSatisfiesEveryRequiredInput() {
        let errors = specErrors(child("run: shell, inject: [{ from: src }]"))
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func anInjectionMustWriteAnInputTheBuiltinHas() {
        expectSpecError(
            child("run: shell, with: { command: [cat] }, inject: [{ from: src, into: stdn }]"),
            at: "children[1].inject[0].into", containing: "shell has no input \"stdn\"; did you mean \"stdin\"?")
        expectSpecError(
            child("run: shell, with: { command: [cat] }, inject: [{ from: src, into: \"[0]\" }]"),
            at: "children[1].inject[0].into", containing: "start the path with a field name")
    }

    @Test func echoAndFailAcceptWhatTheyAreGiven() {
        #expect(specErrors(child("run: echo, with: [1, 2, 3]")).isEmpty)
        #expect(specErrors(child("run: echo, with: 42")).isEmpty)
        #expect(specErrors(child("run: fail")).isEmpty)
        #expect(specErrors(child("run: echo, inject: [{ from: src, into: \"a.b[2]\" }]")).isEmpty)
    }

    @Test(arguments: [
        ("repo", "COHORT_FENCE_REPO"), ("deploy-lock", "COHORT_FENCE_DEPLOY_LOCK"), ("a.b_c", "COHORT_FENCE_A_B_C"),
    ])
    func fenceVariablesUpperCaseTheCategory(_ category: String, _ variable: String) {
        #expect(SpecNames.fenceVariable(for: category) == variable)
    }
}
