/// What one update of a ``LiveResults`` changed, as indexes a list view applies: the form of
/// `UITableView`/`UICollectionView` batch updates and of Realm's collection notifications.
///
/// Deletions, modifications and the sources of moves are indexes in the results *before* the
/// update; insertions and the destinations of moves are indexes in the results *after* it. That
/// is what `performBatchUpdates` expects: delete and reload rows at their old index paths, insert
/// at new ones, move from old to new.
///
/// ```swift
/// let token = live.observe { results, change in
///     var rows = shownRows                      // what the list showed before
///     rows = change.applied(to: rows) { results[$0] }
///     // rows now equals Array(results)
/// }
/// ```
///
/// A model that moved may also have changed: reconfigure it at its new index (`move.to`) after
/// the batch, since a row can't be moved and reloaded in one batch.
public struct LiveChangeSet: Equatable, Sendable, CustomStringConvertible {
    /// One model that changed its place: from its index before to its index after.
    public struct Move: Equatable, Hashable, Sendable {
        /// The index before the update.
        public var from: Int
        /// The index after the update.
        public var to: Int

        /// Creates a move.
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Indexes (before) of models that left the results, ascending.
    public var deletions: [Int] = []
    /// Indexes (after) of models that entered the results, ascending.
    public var insertions: [Int] = []
    /// Indexes (before) of models that changed and kept their place, ascending.
    public var modifications: [Int] = []
    /// Models that changed place, by their source index, ascending.
    public var moves: [Move] = []

    /// Creates a change set.
    public init(deletions: [Int] = [], insertions: [Int] = [], modifications: [Int] = [], moves: [Move] = []) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.moves = moves
    }

    /// Whether the update changed nothing the results show.
    public var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty && moves.isEmpty }

    /// The indexes (after) of the models listed in ``modifications``.
    ///
    /// - Complexity: O(n) in the number of indexes in the change set.
    public var modificationsAfter: [Int] {
        modifications.map { index in
            let shifted = index - deletions.count { $0 < index } - moves.count { $0.from < index }
            return Self.indexAfter(keeping: shifted, insertions: insertions, moveTargets: moves.map(\.to))
        }
    }

    /// `old` with this change applied: deletions and moved models removed, then insertions and
    /// moved models put in at their new indexes, taken from `newElement(index)`. When `old` is
    /// what the results were before the update, the answer is what they are after it.
    ///
    /// ```swift
    /// let rows = change.applied(to: previousRows) { live[$0] }
    /// ```
    ///
    /// - Complexity: O(n + k log k) for n elements and k indexes.
    public func applied<Element>(to old: [Element], newElement: (Int) -> Element) -> [Element] {
        let removed = Set(deletions).union(moves.map(\.from))
        var result: [Element] = []
        result.reserveCapacity(old.count - deletions.count + insertions.count)
        for (index, element) in old.enumerated() where !removed.contains(index) { result.append(element) }
        for index in (insertions + moves.map(\.to)).sorted() {
            result.insert(newElement(index), at: min(index, result.count))
        }
        return result
    }

    public var description: String {
        "LiveChangeSet(deletions: \(deletions), insertions: \(insertions), modifications: \(modifications), moves: \(moves.map { "\($0.from)→\($0.to)" }))"
    }

    /// The change from `old` to `new` (identities in order, each at most once): models only in
    /// `old` are deleted, models only in `new` inserted, and of the models in both, those outside
    /// a longest run that kept its relative order are moved; those that stay and are in
    /// `modified` are modifications.
    ///
    /// - Complexity: O(n log n) in the number of models.
    static func between(_ old: [ObjectIdentifier], _ new: [ObjectIdentifier], modified: Set<ObjectIdentifier>) -> LiveChangeSet {
        var change = LiveChangeSet()
        var newIndex: [ObjectIdentifier: Int] = [:]
        newIndex.reserveCapacity(new.count)
        for (index, id) in new.enumerated() { newIndex[id] = index }
        var oldIds = Set<ObjectIdentifier>()
        oldIds.reserveCapacity(old.count)
        var common: [(from: Int, to: Int)] = []
        for (index, id) in old.enumerated() {
            oldIds.insert(id)
            if let to = newIndex[id] { common.append((index, to)) } else { change.deletions.append(index) }
        }
        for (index, id) in new.enumerated() where !oldIds.contains(id) { change.insertions.append(index) }
        let staying = Self.longestIncreasingRun(common.map(\.to))
        for (position, pair) in common.enumerated() {
            if staying.contains(position) {
                if modified.contains(old[pair.from]) { change.modifications.append(pair.from) }
            } else {
                change.moves.append(Move(from: pair.from, to: pair.to))
            }
        }
        return change
    }

    /// The positions in `values` of a longest strictly increasing subsequence (patience sorting).
    static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []  // positions in `values` of the smallest tail of each run length
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run = Set<Int>()
        var position = tails.last ?? -1
        while position >= 0 {
            run.insert(position)
            position = previous[position]
        }
        return run
    }

    /// The index after the update of the model at `kept` among the models kept in place, with
    /// `insertions` and `moveTargets` put in around it.
    private static func indexAfter(keeping kept: Int, insertions: [Int], moveTargets: [Int]) -> Int {
        let taken = (insertions + moveTargets).sorted()
        var index = kept
        for target in taken where target <= index { index += 1 }
        return index
    }
}
