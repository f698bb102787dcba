/// How hard each commit of the journal waits for the disk (SQLite's `synchronous` in WAL mode).
public enum JournalSynchronous: String, Hashable, Sendable, CaseIterable {
    /// Every loop turn's transaction is on disk (fsync) before its replies go out: an accepted
    /// group survives a process crash and a power loss or kernel crash. The default.
    case full
    /// Commits reach the operating system, not necessarily the disk: an accepted group survives
    /// a crash or `kill -9` of the coordinator, but a power loss or kernel crash may lose the
    /// last turns' commits (the journal stays consistent, never damaged). Faster.
    case normal
}
