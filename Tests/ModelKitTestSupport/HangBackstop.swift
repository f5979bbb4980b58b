import Foundation
import Testing

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a test that could hang: a backstop that only a hang reaches.
    ///
    /// A test waits for the events it checks, never for time to pass, so that a machine busy
    /// with other work slows it down without failing it. Its time limit only turns a hang into a
    /// failure, and is generous: Swift Testing counts the time a test waits for a thread of the
    /// cooperative pool (two on a two-core machine) behind the other tests, and for the Kinto
    /// server's first install and start. At a load of 10 on 2 cores, limits of one and two
    /// minutes failed 21 tests that were not hung (issue #30).
    ///
    /// `MODELKIT_TEST_BACKSTOP_MINUTES` sets another limit, for measurements run as tests at
    /// sizes that take longer (`MODELKIT_PUSHDOWN_RECORDS=100000` on PostgreSQL).
    public static var hangBackstop: Self {
        let minutes = ProcessInfo.processInfo.environment["MODELKIT_TEST_BACKSTOP_MINUTES"].flatMap { Int($0) } ?? 20
        return .timeLimit(.minutes(max(1, minutes)))
    }
}
