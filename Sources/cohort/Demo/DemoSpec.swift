/// The group `cohort demo` runs. It needs workers labelled `alpha` and `beta` (the demo starts
/// three: alpha, beta, gamma) and takes a few seconds.
enum DemoSpec {
    static let sourceName = "demo.yaml"

    /// The children the demo checks by name.
    static let shards = ["shard-1", "shard-2", "shard-3", "shard-4"]
    static let producer = "produce"
    static let consumer = "consume"
    static let migrations = ["migrate-a", "migrate-b", "migrate-c"]
    static let cancelled = "slow"
    static let dependentOfCancelled = "after-slow"
    /// The worker labels the producer and the consumer are pinned to.
    static let producerLabel = "alpha"
    static let consumerLabel = "beta"

    static let text = """
        # The group `cohort demo` submits: fan-out, injection across workers, an exclusive
        # section and a cancellation, on three workers labelled alpha, beta and gamma.
        name: demo
        timeout: 5m
        onChildFailure: cancel-dependents
        children:
          # Fan-out: four independent shards, spread over whichever workers have free slots.
          - name: shard-1
            run: shell
            with: { command: ["sh", "-c", "sleep 0.8; echo 1"] }
          - name: shard-2
            run: shell
            with: { command: ["sh", "-c", "sleep 1.0; echo 4"] }
          - name: shard-3
            run: shell
            with: { command: ["sh", "-c", "sleep 1.2; echo 9"] }
          - name: shard-4
            run: shell
            with: { command: ["sh", "-c", "sleep 1.4; echo 16"] }

          # Injection across workers: `produce` is pinned to the worker labelled alpha,
          # `consume` to the one labelled beta; the coordinator carries the producer's stdout
          # (and every shard's) into the consumer's input.
          - name: produce
            run: shell
            requires: [alpha]
            with: { command: ["sh", "-c", "echo \\"artifact built on $COHORT_WORKER\\""] }
          - name: consume
            run: shell
            requires: [beta]
            inject:
              - { from: produce, select: stdout, into: stdin }
              - { from: shard-1, select: stdout, into: env.SHARD_1 }
              - { from: shard-2, select: stdout, into: env.SHARD_2 }
              - { from: shard-3, select: stdout, into: env.SHARD_3 }
              - { from: shard-4, select: stdout, into: env.SHARD_4 }
            with:
              command:
                - sh
                - -c
                - 'echo "received [$(cat)] on $COHORT_WORKER; shards sum to $((SHARD_1 + SHARD_2 + SHARD_3 + SHARD_4))"'

          # An exclusive section: three migrations share the category `database`, so they run
          # one at a time wherever they are placed; each sees its fencing token.
          - name: migrate-a
            run: shell
            exclusive: [database]
            with: { command: ["sh", "-c", "echo \\"fence $COHORT_FENCE_DATABASE on $COHORT_WORKER\\"; sleep 0.5"] }
          - name: migrate-b
            run: shell
            exclusive: [database]
            with: { command: ["sh", "-c", "echo \\"fence $COHORT_FENCE_DATABASE on $COHORT_WORKER\\"; sleep 0.5"] }
          - name: migrate-c
            run: shell
            exclusive: [database]
            with: { command: ["sh", "-c", "echo \\"fence $COHORT_FENCE_DATABASE on $COHORT_WORKER\\"; sleep 0.5"] }

          # A cancellation: `slow` would run for ten minutes; the demo cancels it once it runs
          # (`cohort cancel GROUP --child slow`), and its dependent never starts.
          - name: slow
            run: shell
            with: { command: ["sh", "-c", "sleep 600"] }
          - name: after-slow
            run: echo
            after: [slow]
            with: { never: "runs" }
        """
}
