import Foundation
import Observation

/// The results of a query that keep themselves up to date: the models that match, in the query's
/// order and window, as a collection that follows every insertion, change, removal, load, merge
/// and undo in its context, and says what each update changed.
///
/// ```swift
/// let live = try Author.query(in: context).where(\.age, .greaterThan(30)).sorted(by: \.name).live()
/// let token = live.observe { results, change in
///     print(change.insertions, change.deletions, results.count)
/// }
/// Author.instance(in: context).age = 40    // one change set: an insertion
/// ```
///
/// A live result set is `Observable`: reading it in `withObservationTracking` or a SwiftUI view's
/// `body` tracks it. Updates are incremental: a change reads only the model it touched, and moves
/// it within the sorted results by binary search; the query isn't run again. (A filter or order
/// that reads other models through references is the exception: any change in the context runs
/// it again, and the change set is computed by comparing the results.)
///
/// A live result set belongs to its context's isolation domain, like the models it holds. It
/// stops following the context when it is released.
public final class LiveResults<M: Model>: RandomAccessCollection, Observable {
    public typealias Index = Int
    public typealias Element = M

    /// The query, without its window: the results hold all matches, the collection shows the
    /// window.
    let order: LiveOrder<M>
    let window: (offset: Int, limit: Int?)
    let readsOtherModels: Bool
    /// Every match, in the query's order.
    var matches: OrderedModels<M>
    /// The query's context (read on every event: `query` is a copy of the whole query).
    let context: ModelContext
    private var contextToken: ObservationToken?
    private let observers = LiveObservers()
    private let registrar = ObservationRegistrar()
    /// Advanced by every update; observed reads register on it.
    private var version = 0
    /// `\.version`, made once. A key path into a generic class is made anew wherever it is
    /// written (`_swift_getKeyPath` allocates and fills it): that was a quarter of a single
    /// edit's update, and a cost on every observed read, in a `perf record -g` of live-edit.
    private let versionPath: ReferenceWritableKeyPath<LiveResults<M>, Int> = \.version
    /// What the context's open batch changed, placed at its end (see LiveResults+Batch.swift).
    var pending: LiveBatch?
    /// How many batch ends placed their models by walking all the results, not by search (see
    /// LiveResults+Batch.swift): tests check which way a batch went.
    var walkedBatches = 0
    /// How many steps of the walk one comparison of a search costs, roughly (a set lookup
    /// against reading and comparing sort values): a batch's end searches when k models'
    /// searches cost less than walking the n results. Tests set 0 to always search.
    var searchCostFactor = 8

    /// The error of the last update that could not place a model, or `nil`. A model whose filter
    /// or sort value can't be read counts as not matching.
    public internal(set) var lastError: QueryError?

    init(_ query: Query<M>) throws(QueryError) {
        var all = query
        all.limitCount = nil
        all.offsetCount = 0
        order = LiveOrder(query: all)
        window = (query.offsetCount, query.limitCount)
        readsOtherModels = order.readsOtherModels
        let context = query.context
        self.context = context
        // The query runs in any case: it validates the keys, and throws as `results()` does.
        let results = try Self.run(all)
        // Made while a batch is open (the context's, or a model's own), its results are read as
        // the batch's events will find them: each model by its values at the batch's start. So
        // the events need no re-run at its end. (Checking costs a look at each model's tracker.)
        let inBatch = context.isBatchingChanges || context.models(of: M.self).contains { $0.isInOpenBatch }
        matches = try Self.keyed(inBatch ? try Self.run(all, byReportedValues: order) : results, order: order)
        contextToken = ObservationToken(
            list: context.changeObservers,
            id: context.addChangeObserver(
                { [weak self] event, model, before in self?.handle(event, model: model, before: before) },
                // It re-reads the models: their encoded changes would only cost.
                readsChanges: false))
    }

    /// The results of a query that can't run: empty, following nothing, with `error` as
    /// ``lastError``. What ``LiveQuery`` shows for such a query, as its value can't throw.
    init(failed query: Query<M>, error: QueryError) {
        order = LiveOrder(query: query)
        window = (query.offsetCount, query.limitCount)
        readsOtherModels = false
        context = query.context
        matches = OrderedModels([])
        lastError = error
    }

    // MARK: - The collection

    public var startIndex: Int { 0 }

    /// The number of results in the window.
    ///
    /// - Complexity: O(1).
    public var endIndex: Int {
        access()
        return windowCount
    }

    /// The model at `position`.
    ///
    /// - Complexity: O(log(n / 512)) for n matches.
    public subscript(position: Int) -> M {
        access()
        precondition(position >= 0 && position < windowCount, "index \(position) out of range 0..<\(windowCount)")
        return matches[window.offset + position]
    }

    /// How many models match, ignoring the query's limit and offset: a live count.
    ///
    /// ```swift
    /// let unread = try Message.query(in: context).where(\.isRead, .equals(false)).live()
    /// badge.text = "\(unread.totalCount)"
    /// ```
    ///
    /// - Complexity: O(1).
    public var totalCount: Int {
        access()
        return matches.count
    }

    /// Whether any model matches, ignoring the query's limit and offset: a live "exists".
    ///
    /// - Complexity: O(1).
    public var exists: Bool { totalCount > 0 }

    private var windowCount: Int {
        let available = Swift.max(0, matches.count - window.offset)
        return window.limit.map { Swift.min($0, available) } ?? available
    }

    private func access() {
        registrar.access(self, keyPath: versionPath)
    }

    // MARK: - Observers

    /// Calls `body` with the results and what changed, after every update that changed what
    /// they show, until the token is cancelled or released.
    ///
    /// `body` runs synchronously in the context's domain, right after the change; the results
    /// are already updated. Apply the change set to what your list showed (see
    /// ``LiveChangeSet``).
    ///
    /// ```swift
    /// let token = live.observe { results, change in
    ///     tableView.performBatchUpdates { /* change.deletions, change.insertions… */ }
    /// }
    /// ```
    ///
    /// - Complexity: O(1) to register.
    public func observe(_ body: @escaping (LiveResults<M>, LiveChangeSet) -> Void) -> ObservationToken {
        let id = observers.add { [unowned self] change in body(self, change) }
        let observers = self.observers
        return ObservationToken { observers.remove(id) }
    }

    /// Every update's change set, as an asynchronous sequence. Each change set applies to the
    /// results as the one before left them; the first applies to the results at this call.
    ///
    /// ```swift
    /// for await change in live.changes() {
    ///     print(change.insertions)
    /// }
    /// ```
    ///
    /// The sequence is registered at the call; change sets are buffered until read (pass
    /// `bufferingPolicy:` to limit that). It ends when the iteration stops or the stream is
    /// released.
    public func changes(
        bufferingPolicy: AsyncStream<LiveChangeSet>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<LiveChangeSet> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveChangeSet.self, bufferingPolicy: bufferingPolicy)
        let id = observers.add({ continuation.yield($0) }, finish: { continuation.finish() })
        let observers = self.observers
        continuation.onTermination = { _ in observers.remove(id) }
        return stream
    }

    deinit {
        contextToken?.cancel()
        observers.finish()
    }

    // MARK: - Updates

    /// While the context's batch is open, collects the model an event is about; else places it
    /// (after what an ended batch collected), and tells observers what the window showed changed.
    private func handle(_ event: ModelChangeEvent, model: AnyObject?, before: Any?) {
        if context.isBatchingChanges {
            collect(event, model: model, before: before)
            return
        }
        if pending != nil { placeCollected() }
        place(event, model: model, before: before)
    }

    /// Places the model an event is about, and tells observers what the window showed changed.
    func place(_ event: ModelChangeEvent, model: AnyObject?, before: Any?) {
        guard let model = model as? M else {
            if readsOtherModels { rerun(modified: []) }
            return
        }
        if readsOtherModels {
            rerun(modified: event.kind == .updated ? [ObjectIdentifier(model)] : [])
            return
        }
        let oldWindow = window.offset == 0 && window.limit == nil ? nil : windowIdentifiers()
        let moved: (from: Int?, to: Int?)
        do {
            moved = try place(model, kind: event.kind, before: before as? M.Properties)
        } catch {
            lastError = error
            return
        }
        var change: LiveChangeSet
        if let oldWindow {
            let modified: Set<ObjectIdentifier> = event.kind == .updated ? [ObjectIdentifier(model)] : []
            change = LiveChangeSet.between(oldWindow, windowIdentifiers(), modified: modified)
        } else {
            change = LiveChangeSet()
            switch moved {
            case (nil, nil): break
            case (let from?, nil): change.deletions = [from]
            case (nil, let to?): change.insertions = [to]
            case (let from?, let to?):
                if from == to { change.modifications = [from] } else { change.moves = [.init(from: from, to: to)] }
            }
        }
        deliver(change)
    }

    /// Moves `model` to where it belongs now: removed from where its values before the event
    /// put it, inserted where they put it now if it matches. Returns both positions.
    private func place(_ model: M, kind: ModelChangeEvent.Kind, before: M.Properties?) throws(QueryError) -> (
        from: Int?, to: Int?
    ) {
        try query.guarded {
            // Where it was: by its values before an update, else by its values now (an insertion
            // or a removal leaves them alone; see `LiveOrder.position(of:placedBy:in:)`).
            let from = try self.position(of: model, placedBy: before)
            if let from { self.matches.remove(at: from) }
            guard kind != .removed, model.storage.context === self.context, try self.order.accepts(model) else {
                return (from, nil)
            }
            let probe = try self.order.probe(model)
            let to = try self.order.position(of: probe, in: self.matches)
            self.matches.insert(model, key: probe.key, at: to)
            return (from, to)
        }
    }

    /// Where `model` is in the matches, by `values` (its values before an update) or else by
    /// its values now; `nil` when it isn't there.
    private func position(of model: M, placedBy values: M.Properties?) throws -> Int? {
        let found =
            try values.map { try order.position(of: model, placedBy: $0, in: matches) }
            ?? order.position(of: order.probe(model), in: matches)
        return found < matches.count && matches[found] === model ? found : nil
    }

    /// `sorted` (in `order`) with the keys their searches decide by (see OrderedModels): each
    /// model's, read with its reported values, for an order that has them and whose results
    /// are searched (not re-run).
    ///
    /// - Complexity: O(n) for n models.
    private static func keyed(_ sorted: [M], order: LiveOrder<M>) throws(QueryError) -> OrderedModels<M> {
        guard !order.readsOtherModels, order.hasKeys else { return OrderedModels(sorted) }
        let keys = try order.query.guarded { try sorted.map { try order.probe($0).key } }
        return OrderedModels(sorted, keys: keys)
    }

    /// Runs the query again and compares: for filters and orders that read other models.
    func rerun(modified: Set<ObjectIdentifier>) {
        let oldWindow = windowIdentifiers()
        do {
            matches = OrderedModels(try Self.run(query))
        } catch {
            lastError = error
            return
        }
        deliver(LiveChangeSet.between(oldWindow, windowIdentifiers(), modified: modified))
    }

    func deliver(_ change: LiveChangeSet) {
        guard !change.isEmpty else { return }
        registrar.willSet(self, keyPath: versionPath)
        version &+= 1
        registrar.didSet(self, keyPath: versionPath)
        observers.notify(change)
    }

    func windowIdentifiers() -> [ObjectIdentifier] {
        (0..<windowCount).map { ObjectIdentifier(matches[window.offset + $0]) }
    }

    var query: Query<M> { order.query }

    /// All matches of `query` (no window), in its order: by model id without sort keys.
    private static func run(_ query: Query<M>) throws(QueryError) -> [M] {
        let results = try query.results()
        guard query.sortKeys.isEmpty else { return results }
        return results.sorted { $0.modelId < $1.modelId }
    }

    /// All matches of the order's query as ``run(_:)`` finds them, but each model read with
    /// its reported values (see `Model.withReportedValues`): in an open batch, its values at
    /// the batch's start, where the batch's events will look for it.
    ///
    /// - Complexity: O(n) filter evaluations for n models of the type, and O(k log k)
    ///   comparisons for k matches.
    private static func run(_ query: Query<M>, byReportedValues order: LiveOrder<M>) throws(QueryError) -> [M] {
        try query.guarded {
            var probes: [LiveOrder<M>.Probe] = []
            for model in query.context.models(of: M.self) where try order.accepts(model) { probes.append(try order.probe(model)) }
            return try order.sorted(probes).map { $0.model }
        }
    }
}

/// The closure observers and streams of a live result set. Adding and removing are
/// thread-safe (a token may be cancelled anywhere); calls happen in the context's domain.
// Unchecked: the callbacks are only stored and copied under the lock, and called by the live
// result set in its context's domain.
final class LiveObservers: @unchecked Sendable {
    typealias Callback = (LiveChangeSet) -> Void
    private struct Entry {
        let id: UInt64
        let callback: Callback
        /// Ends a stream when the results go away.
        let finish: (() -> Void)?
    }
    private let state = Locked((nextId: UInt64(0), entries: [Entry]()))

    func add(_ callback: @escaping Callback, finish: (() -> Void)? = nil) -> UInt64 {
        state.withLock { state in
            state.nextId += 1
            state.entries.append(Entry(id: state.nextId, callback: callback, finish: finish))
            return state.nextId
        }
    }

    func remove(_ id: UInt64) {
        state.withLock { state in state.entries.removeAll { $0.id == id } }
    }

    func notify(_ change: LiveChangeSet) {
        let callbacks = state.withLock { $0.entries.map(\.callback) }
        for callback in callbacks { callback(change) }
    }

    /// Drops every observer and ends every stream: the results are gone.
    func finish() {
        let entries = state.withLock { state in
            defer { state.entries.removeAll() }
            return state.entries
        }
        for entry in entries { entry.finish?() }
    }
}

extension Query {
    /// Runs the query and keeps its results up to date: a ``LiveResults`` that follows every
    /// change in the context, incrementally, and tells observers what changed.
    ///
    /// ```swift
    /// let live = try Author.query(in: context).sorted(by: \.name).limit(50).live()
    /// print(live.count, live.first?.name ?? "")
    /// ```
    ///
    /// Without sort keys, the results are in model-id order.
    ///
    /// - Throws: ``QueryError`` as ``results()`` does.
    /// - Complexity: As ``results()`` to start. Then, per changed model of the type, O(log n)
    ///   comparisons to find its old and new places among n matches, and moving at most 512
    ///   models' pointers; with `limit` or `offset`, also O(w) for a window of w results. At the
    ///   end of a ``ModelContext/batchChanges(_:)`` that changed k > 1 models of the type,
    ///   O(k log n) once when k · 8 log n < n, else O(n + k log n) (and so when one of them is
    ///   still in a `beginChanges()` batch of its own). A filter or order through references
    ///   runs the query again on every change in the context (once per batch). Memory: the
    ///   matches' pointers, in chunks, and for an order by one `String` key path 8 bytes more
    ///   a match (the string's first bytes, which the searches compare).
    public func live() throws(QueryError) -> LiveResults<M> {
        try LiveResults(self)
    }

    /// ``live()``, or for a query that can't run, empty results whose ``LiveResults/lastError``
    /// says why: for ``LiveQuery``, whose value can't throw.
    func liveOrFailed() -> LiveResults<M> {
        do throws(QueryError) {
            return try live()
        } catch {
            return LiveResults(failed: self, error: error)
        }
    }
}
