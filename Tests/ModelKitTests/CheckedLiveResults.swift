import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A live query and every change set it delivered, each checked as it came: applied to the
/// results before it, it gives the results after it.
@MainActor final class CheckedLiveResults {
    let query: Query<LiveWriter>
    let live: LiveResults<LiveWriter>
    var shown: [LiveWriter]
    var changes: [LiveChangeSet] = []
    var token: ObservationToken?

    /// - Parameter searchCostFactor: When given, replaces the live results' cost factor of a
    ///   batch's search (0: every batch is placed by search).
    init(_ query: Query<LiveWriter>, searchCostFactor: Int? = nil) throws {
        self.query = query
        live = try query.live()
        if let searchCostFactor { live.searchCostFactor = searchCostFactor }
        shown = Array(live)
        token = live.observe { [unowned self] results, change in
            changes.append(change)
            let applied = change.applied(to: shown) { results[$0] }
            #expect(applied.map(ObjectIdentifier.init) == results.map(ObjectIdentifier.init), "\(change)")
            shown = Array(results)
        }
    }

    /// Whether the live results are the query's results run from scratch, in order, and keep
    /// each model with the key of the values that placed it (see ``keysAgree(_:)``).
    func equalsRerun() throws -> Bool {
        try query.results().map(ObjectIdentifier.init) == live.map(ObjectIdentifier.init) && Self.keysAgree(live)
    }

    /// Whether every model in `live`'s storage has the key its reported values give (for an
    /// order by one string key path; none otherwise, and none for results that are re-run): a
    /// stale key would misplace a model only later, when a search compares it.
    static func keysAgree<M: Model>(_ live: LiveResults<M>) throws -> Bool {
        let models = live.matches.elements
        let expected =
            !live.readsOtherModels && live.order.hasKeys
            ? try models.map { try live.order.probe($0).key }
            : models.map { _ in OrderedModels<M>.noKey }
        return live.matches.allKeys == expected
    }

    var ages: [Int] { live.map(\.age) }
    /// The models shown, by object id (their values are read live, their places are not).
    var ids: [String] { live.map { $0.objectId ?? "" } }
}
